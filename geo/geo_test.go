package geo

import (
	"strconv"
	"strings"
	"testing"
)

// glibcCases are x, sin(x), cos(x), y, asin(y) as glibc 2.36 computes
// them (C's %a format).
const glibcCases = `
-0x1.6575e323594cdp-8 -0x1.65756efaae4edp-8 0x1.fffe0cde4f4f2p-1 0x1.9d35e9acf028p-1 0x1.e0d742b69dd13p-1
-0x1.3ab2d0678b534p-1 -0x1.2741268a95ca6p-1 0x1.a24aee7115c89p-1 0x1.92d4078614a8p-2 0x1.9e0424e0a896fp-2
-0x1.67d326fa5bd9ap-1 -0x1.4aed8d220c69bp-1 0x1.86ae0706945a4p-1 0x1.2b64ffe21c044p-23 0x1.2b64ffe21c055p-23
0x1.920a7ddd26852p-8 0x1.9209d8997f0d4p-8 0x1.fffd889b8e0cep-1 0x1.c2adfe234d0ep-1 0x1.138bf775f6854p+0
-0x1.90caa7095fccdp-3 -0x1.8e3cfda7372cp-3 0x1.f63a186133234p-1 0x1.abb4f5a58894p-2 0x1.b93c0ee1b5a7p-2
-0x1.a92d17717899ap-1 -0x1.79f77957a4614p-1 0x1.59607a121258dp-1 0x1.b70bf77ac426p-1 0x1.07c95adf65d8bp+0
-0x1.1279c0a7f6b33p-8 -0x1.12798c11a721p-8 0x1.fffed9b741e1bp-1 0x1.6c9ca1095478p-2 0x1.74cacb02060b3p-2
0x1.f86f8cf0eb0cdp-2 0x1.e447b87ae4638p-2 0x1.c31f8cf82c4d3p-1 0x1.40bff344a3c42p-21 0x1.40bff344a3d92p-21
-0x1.f2b3a451a9534p-1 -0x1.a780e8b29cc38p-1 0x1.1fbaf6e105af8p-1 0x1.49b6238058e8p-2 0x1.4fb125d209e77p-2
0x1.8554664dba3d7p-8 0x1.8553d0397167fp-8 0x1.fffdafe6d763ap-1 0x1.d9720bc25a24p-2 0x1.ec2d96ab455cp-2
-0x1.68b180b0f54p-2 -0x1.6147e29c450e4p-2 0x1.e0907e4f366fbp-1 0x1.e53b42690658p-2 0x1.f984082e2f537p-2
-0x1.397d5f917bc67p+0 -0x1.e19e2828be3e5p-1 0x1.5b7ede4d52377p-2 0x1.01233ac23f5p-4 0x1.014e8b5d661fap-4
-0x1.1635ebe07235cp-7 -0x1.163510d2fb383p-7 0x1.fffb469d3d81cp-1 0x1.2a2786bee657bp-21 0x1.2a2786bee6689p-21
-0x1.45966f8a854p-1 -0x1.30154f7961db2p-1 0x1.9beb4cfc9ed9ap-1 0x1.a9c552909a84p-2 0x1.b71ad1a4db26fp-2
-0x1.6d3850e2eb334p-7 -0x1.6d3661557774bp-7 0x1.fff7dbdef9c9ep-1 0x1.eee4fe282cdp-2 0x1.0242b0122bc7dp-1
0x1.b5caff0fc8333p-9 0x1.b5cac9b6cbdc2p-9 0x1.ffff44d460769p-1 0x1.4720c712d28p-6 0x1.472657c32b94fp-6
0x1.8d3cd42b511cdp+0 0x1.ffe820148315bp-1 0x1.38b369df79caep-6 0x1.b498e0eae1ep-1 0x1.056c89c0d8f1dp+0
0x1.7b2c7fe4d359ap+0 0x1.fdf1a60d21542p-1 0x1.6eb578952ae9cp-4 0x1.ed906547d49d7p-25 0x1.ed906547d49dcp-25
-0x1.0ef93077dc8f6p-8 -0x1.0ef8fdde530d1p-8 0x1.fffee12d85fb7p-1 0x1.4f703902738ap-1 0x1.6dc3e5d306d76p-1
0x1.89e70ada0e99ap-1 0x1.642dcadb97a69p-1 0x1.6fce1c7ba07c6p-1 0x1.6506f3cf166p-5 0x1.6523e95246d65p-5
`

func TestLibmMatchesGlibc(t *testing.T) {
	for _, line := range strings.Split(strings.TrimSpace(glibcCases), "\n") {
		var v [5]float64
		for i, f := range strings.Fields(line) {
			var err error
			if v[i], err = strconv.ParseFloat(f, 64); err != nil {
				t.Fatal(err)
			}
		}
		if got := sin(v[0]); got != v[1] {
			t.Errorf("sin(%x) = %x, glibc %x", v[0], got, v[1])
		}
		if got := cos(v[0]); got != v[2] {
			t.Errorf("cos(%x) = %x, glibc %x", v[0], got, v[2])
		}
		if got := asin(v[3]); got != v[4] {
			t.Errorf("asin(%x) = %x, glibc %x", v[3], got, v[4])
		}
	}
}

// Values from redis-server 7.0.15.
func TestScoresAndHashes(t *testing.T) {
	cases := []struct {
		lon, lat float64
		score    uint64
		hash     string
	}{
		{13.361389, 38.115556, 3479099956230698, "sqc8b49rny0"},
		{15.087269, 37.502669, 3479447370796909, "sqdtr74hyu0"},
		{180, 85.05112878, 13510798882111488, "bp05b5048p0"},
		{-180, -85.05112878, 0, "00bh0hbj200"},
	}
	for _, c := range cases {
		s, ok := ScoreOf(c.lon, c.lat)
		if !ok || s != c.score {
			t.Errorf("ScoreOf(%v,%v) = %d, want %d", c.lon, c.lat, s, c.score)
		}
		h, _ := StandardHash(float64(s))
		if string(h) != c.hash {
			t.Errorf("hash of %d = %s, want %s", s, h, c.hash)
		}
	}
	if _, ok := ScoreOf(180.0000001, 0); ok {
		t.Error("longitude out of range accepted")
	}
	lon, lat, _ := DecodeScore(0)
	if lon != -179.99999731779099 || lat != -85.05112751263943 {
		t.Errorf("DecodeScore(0) = %v,%v", lon, lat)
	}
}

func TestDistance(t *testing.T) {
	// GEODIST Sicily Palermo Catania: 166274.1516 (redis-server 7.0.15).
	lon1, lat1, _ := DecodeScore(3479099956230698)
	lon2, lat2, _ := DecodeScore(3479447370796909)
	if d := Distance(lon1, lat1, lon2, lat2); strconv.FormatFloat(d, 'f', 4, 64) != "166274.1516" {
		t.Errorf("distance %v", d)
	}
}

func BenchmarkDistance(b *testing.B) {
	for i := 0; i < b.N; i++ {
		Distance(13.361389, 38.115556, 15.087269+float64(i%100)*1e-3, 37.502669)
	}
}
