package server_test

import (
	"math/rand"
	"strconv"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/redistest"
)

// TestGeoWakesBlocked: GEOADD and GEO*STORE creating a sorted set serve a
// client blocked in BZPOPMIN on that key.
func TestGeoWakesBlocked(t *testing.T) {
	r, s := sortTargets(t, func(t *testing.T, addr string) []string {
		a := redistest.Dial(t, addr)
		p := redistest.Dial(t, addr)
		rec := redistest.NewRecorder(t, p)
		do := rec.Do
		for _, cmd := range [][]string{
			{"GEOADD", "k", "13.361389", "38.115556", "Palermo"},
			{"GEORADIUS", "src", "15", "37", "200", "km", "STORE", "k"},
			{"GEORADIUSBYMEMBER", "src", "Catania", "200", "km", "STOREDIST", "k"},
			{"GEOSEARCHSTORE", "k", "src", "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km"},
		} {
			do("DEL", "k")
			do("GEOADD", "src", "13.361389", "38.115556", "Palermo", "15.087269", "37.502669", "Catania")
			got := make(chan string, 1)
			go func() { rep, _ := a.Do("BZPOPMIN", "k", "5"); got <- rep }()
			time.Sleep(50 * time.Millisecond)
			do(cmd...)
			select {
			case rep := <-got:
				rec.Replies = append(rec.Replies, rep)
			case <-time.After(3 * time.Second):
				t.Fatalf("BZPOPMIN was not served after %v", cmd)
			}
		}
		return rec.Replies
	})
	sortCompare(t, r, s)
}

// TestGeoNotifications: GEOADD notifies zadd (it is ZADD underneath);
// the STORE forms notify georadiusstore / geosearchstore, or del when an
// empty result removes the destination.
func TestGeoNotifications(t *testing.T) {
	r, s := sortTargets(t, func(t *testing.T, addr string) []string {
		return keyEvents(t, addr, [][]string{
			{"GEOADD", "src", "13.361389", "38.115556", "Palermo", "15.087269", "37.502669", "Catania"},
			{"GEOADD", "src", "13.361389", "38.115556", "Palermo"},
			{"GEOADD", "src", "XX", "CH", "13", "38", "Palermo"},
			{"GEORADIUS", "src", "15", "37", "200", "km", "STORE", "d1"},
			{"GEORADIUS", "src", "15", "37", "200", "km", "STOREDIST", "d1"},
			{"GEORADIUSBYMEMBER", "src", "Catania", "200", "km", "STORE", "d2"},
			{"GEOSEARCHSTORE", "d3", "src", "FROMMEMBER", "Catania", "BYBOX", "400", "400", "km"},
			{"GEOSEARCHSTORE", "d3", "src", "FROMLONLAT", "0", "0", "BYRADIUS", "1", "m"},
			{"GEOSEARCHSTORE", "d2", "nosuch", "FROMLONLAT", "0", "0", "BYRADIUS", "1", "m"},
			{"GEORADIUS", "nosuch", "0", "0", "1", "m", "STORE", "d1"},
			{"GEOSEARCH", "src", "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km"},
		})
	})
	sortCompare(t, r, s)
}

// TestGeoStoreWatch: GEOADD and STORE destinations touch WATCHed keys.
func TestGeoStoreWatch(t *testing.T) {
	r, s := sortTargets(t, func(t *testing.T, addr string) []string {
		a := redistest.Dial(t, addr)
		b := redistest.Dial(t, addr)
		var out []string
		rec := func(c *redistest.Conn, args ...string) {
			rep, err := c.Do(args...)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, rep)
		}
		rec(b, "GEOADD", "src", "13.361389", "38.115556", "Palermo", "15.087269", "37.502669", "Catania")
		for _, op := range [][]string{
			{"GEORADIUS", "src", "15", "37", "200", "km", "STORE", "dst"},
			{"GEOSEARCHSTORE", "dst", "src", "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km"},
			{"GEOSEARCHSTORE", "dst", "src", "FROMLONLAT", "0", "0", "BYRADIUS", "1", "m"},
			{"GEOSEARCHSTORE", "dst", "src", "FROMLONLAT", "0", "0", "BYRADIUS", "1", "m"},
			{"GEOADD", "dst", "1", "1", "a"},
			{"GEOADD", "dst", "1", "1", "a"},
			{"GEOSEARCH", "dst", "FROMLONLAT", "0", "0", "BYRADIUS", "1000", "km"},
		} {
			rec(a, "WATCH", "dst")
			rec(b, op...)
			rec(a, "MULTI")
			rec(a, "PING")
			rec(a, "EXEC")
		}
		return out
	})
	sortCompare(t, r, s)
}

// TestGeoRandomized compares search replies on random points (with many
// duplicates, so ties must come out in Redis's order) for random shapes
// and option combinations.
func TestGeoRandomized(t *testing.T) {
	rng := rand.New(rand.NewSource(11))
	f := func(lo, hi float64) string {
		return strconv.FormatFloat(lo+rng.Float64()*(hi-lo), 'f', 6, 64)
	}
	var setup [][]string
	for k := 0; k < 3; k++ {
		key := "g" + strconv.Itoa(k)
		cmd := []string{"GEOADD", key}
		for i := 0; i < 300; i++ {
			var lon, lat string
			switch {
			case k == 0: // a city-sized cluster
				lon, lat = f(2.2, 2.5), f(48.7, 49)
			case k == 1: // the whole world
				lon, lat = f(-180, 180), f(-85.05112878, 85.05112878)
			default: // few distinct positions: ties
				lon, lat = strconv.Itoa(rng.Intn(3)), strconv.Itoa(rng.Intn(3))
			}
			cmd = append(cmd, lon, lat, "m"+strconv.Itoa(i))
		}
		setup = append(setup, cmd)
	}
	var cmds [][]string
	for i := 0; i < 400; i++ {
		k := rng.Intn(3)
		key := "g" + strconv.Itoa(k)
		var lon, lat string
		switch k {
		case 0:
			lon, lat = f(2.1, 2.6), f(48.6, 49.1)
		case 1:
			lon, lat = f(-180, 180), f(-85, 85)
		default:
			lon, lat = f(-1, 3), f(-1, 3)
		}
		units := []string{"m", "km", "mi", "ft"}
		unit := units[rng.Intn(4)]
		scale := map[string]float64{"m": 1, "km": 1000, "mi": 1609.34, "ft": 0.3048}[unit]
		dist := func() string {
			maxM := []float64{30000, 8000000, 400000}[k]
			return strconv.FormatFloat(rng.Float64()*maxM/scale, 'f', 3, 64)
		}
		var opts []string
		if rng.Intn(2) == 0 {
			opts = append(opts, "WITHDIST")
		}
		if rng.Intn(3) == 0 {
			opts = append(opts, "WITHCOORD")
		}
		if rng.Intn(3) == 0 {
			opts = append(opts, "WITHHASH")
		}
		switch rng.Intn(3) {
		case 1:
			opts = append(opts, "ASC")
		case 2:
			opts = append(opts, "DESC")
		}
		if rng.Intn(2) == 0 {
			opts = append(opts, "COUNT", strconv.Itoa(1+rng.Intn(40)))
			if rng.Intn(3) == 0 {
				opts = append(opts, "ANY")
			}
		}
		member := "m" + strconv.Itoa(rng.Intn(300))
		var cmd []string
		switch rng.Intn(4) {
		case 0:
			cmd = append([]string{"GEORADIUS", key, lon, lat, dist(), unit}, opts...)
		case 1:
			cmd = append([]string{"GEORADIUSBYMEMBER_RO", key, member, dist(), unit}, opts...)
		case 2:
			cmd = append([]string{"GEOSEARCH", key, "FROMLONLAT", lon, lat, "BYBOX", dist(), dist(), unit}, opts...)
		default:
			cmd = append([]string{"GEOSEARCH", key, "FROMMEMBER", member, "BYRADIUS", dist(), unit}, opts...)
		}
		cmds = append(cmds, cmd)
		if i%10 == 0 {
			cmds = append(cmds, []string{"GEOSEARCHSTORE", "dst", key, "FROMMEMBER", member, "BYRADIUS", dist(), unit, "STOREDIST"},
				// Members only: a stored distance shows all 17 digits, and
				// glibc's sin/cos/asin (which Redis uses) are an ulp off
				// the correctly rounded result in about 0.1% of cases.
				[]string{"ZRANGE", "dst", "0", "-1"})
		}
	}
	r, s := sortTargets(t, func(t *testing.T, addr string) []string {
		c := redistest.Dial(t, addr)
		for _, cmd := range setup {
			if _, err := c.Do(cmd...); err != nil {
				t.Fatal(err)
			}
		}
		var out []string
		for _, cmd := range cmds {
			rep, err := c.Do(cmd...)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, rep)
		}
		return out
	})
	if len(r) != len(s) {
		t.Fatalf("%d replies vs %d", len(r), len(s))
	}
	bad := 0
	for i := range r {
		if r[i] != s[i] {
			bad++
			if bad <= 5 {
				t.Errorf("%q:\n redis:  %.400q\n sluice: %.400q", cmds[i], r[i], s[i])
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d replies differ", bad, len(r))
	}
}
