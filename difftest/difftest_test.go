package difftest

import (
	"bufio"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/redistest"
	"github.com/sluicedb/sluice/resp"
)

// Case files (testdata/*.txt) hold cases separated by "=== name" lines.
// Every other non-empty line that does not start with '#' is a command in
// redis-cli syntax (quotes and \x escapes as in inline commands), sent to
// both servers on a fresh connection pair after FLUSHALL, and its raw
// replies are compared. A line may start with a directive:
//
//	!unordered CMD    compare the array reply as a multiset (SMEMBERS, KEYS)
//	!approx CMD       integer replies may differ by 1 (TTL, PTTL within 1ms..)
//	!approx=N CMD     integer replies may differ by N
//	!nocompare CMD    send to both but do not compare (setup with random replies)
//	!sleep MS         wait MS milliseconds
//	!type CMD         compare only the reply's type byte (+ - : $ * ...)
func TestDifferential(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.txt")
	if len(files) == 0 {
		t.Fatal("no case files")
	}
	redisAddr := redistest.StartRedis(t)
	_, sluiceAddr := redistest.StartSluice(t)
	for _, f := range files {
		f := f
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txt"), func(t *testing.T) {
			for _, c := range parseCases(t, f) {
				c := c
				t.Run(c.name, func(t *testing.T) {
					runCase(t, c, redisAddr, sluiceAddr)
				})
			}
		})
	}
}

type line struct {
	no        int
	directive string
	arg       string
	args      []string
}

type caseDef struct {
	name  string
	file  string
	lines []line
}

func parseCases(t *testing.T, path string) []caseDef {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var cases []caseDef
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	no := 0
	for sc.Scan() {
		no++
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		if strings.HasPrefix(text, "===") {
			cases = append(cases, caseDef{name: strings.TrimSpace(strings.TrimPrefix(text, "===")), file: path})
			continue
		}
		if len(cases) == 0 {
			cases = append(cases, caseDef{name: "default", file: path})
		}
		l := line{no: no}
		if strings.HasPrefix(text, "!") {
			d, rest, _ := strings.Cut(text, " ")
			l.directive = d[1:]
			if k, v, ok := strings.Cut(l.directive, "="); ok {
				l.directive, l.arg = k, v
			}
			text = rest
			if l.directive == "sleep" {
				l.arg = strings.TrimSpace(rest)
				text = ""
			}
		}
		if text != "" {
			var p resp.Parser
			_, args, err := p.Next([]byte(text + "\n"))
			if err != nil {
				t.Fatalf("%s:%d: %v", path, no, err)
			}
			for _, a := range args {
				l.args = append(l.args, string(a))
			}
		}
		cases[len(cases)-1].lines = append(cases[len(cases)-1].lines, l)
	}
	return cases
}

func runCase(t *testing.T, c caseDef, redisAddr, sluiceAddr string) {
	r := redistest.Dial(t, redisAddr)
	s := redistest.Dial(t, sluiceAddr)
	for _, conn := range []*redistest.Conn{r, s} {
		reply, err := conn.Do("FLUSHALL")
		if err != nil {
			t.Fatal(err)
		}
		if reply != "+OK\r\n" {
			t.Fatalf("FLUSHALL before the case replied %q", reply)
		}
	}
	for _, l := range c.lines {
		if l.directive == "sleep" {
			ms, _ := strconv.Atoi(l.arg)
			time.Sleep(time.Duration(ms) * time.Millisecond)
			continue
		}
		if len(l.args) == 0 {
			continue
		}
		want, err := r.Do(l.args...)
		if err != nil {
			t.Fatalf("%s:%d redis: %v", c.file, l.no, err)
		}
		got, err := s.Do(l.args...)
		if err != nil {
			t.Fatalf("%s:%d sluice: %v (redis replied %q)", c.file, l.no, err, want)
		}
		if !same(l, want, got) {
			t.Errorf("%s:%d %q\n redis:  %q\n sluice: %q", c.file, l.no, strings.Join(l.args, " "), want, got)
		}
	}
}

func same(l line, want, got string) bool {
	switch l.directive {
	case "nocompare":
		return true
	case "type":
		return len(want) > 0 && len(got) > 0 && want[0] == got[0]
	case "unordered":
		return sortedElems(want) == sortedElems(got)
	case "approx":
		tol := int64(1)
		if l.arg != "" {
			tol, _ = strconv.ParseInt(l.arg, 10, 64)
		}
		// Integers anywhere in the reply (nested ones too, such as the
		// idle times in XPENDING's entries) may differ by tol; every
		// other line must match.
		wl, gl := strings.Split(want, "\r\n"), strings.Split(got, "\r\n")
		if len(wl) != len(gl) {
			return false
		}
		for i := range wl {
			if wl[i] == gl[i] {
				continue
			}
			if !strings.HasPrefix(wl[i], ":") || !strings.HasPrefix(gl[i], ":") {
				return false
			}
			a, errA := strconv.ParseInt(wl[i][1:], 10, 64)
			b, errB := strconv.ParseInt(gl[i][1:], 10, 64)
			if errA != nil || errB != nil || max(a-b, b-a) > tol {
				return false
			}
		}
		return true
	}
	return want == got
}

// sortedElems splits an aggregate reply into its elements and sorts them.
func sortedElems(raw string) string {
	rd := bufio.NewReader(strings.NewReader(raw))
	head, err := rd.ReadString('\n')
	if err != nil || len(head) < 1 || strings.IndexByte("*~%>", head[0]) < 0 {
		return raw
	}
	n, _ := strconv.Atoi(strings.TrimSpace(head[1:]))
	if head[0] == '%' {
		n *= 2
	}
	var elems []string
	for i := 0; i < n; i++ {
		e, err := redistest.ReadReply(rd)
		if err != nil {
			return raw
		}
		elems = append(elems, e)
	}
	if head[0] == '%' {
		pairs := make([]string, 0, n/2)
		for i := 0; i+1 < len(elems); i += 2 {
			pairs = append(pairs, elems[i]+elems[i+1])
		}
		elems = pairs
	}
	sort.Strings(elems)
	return head[:1] + strings.Join(elems, "|")
}
