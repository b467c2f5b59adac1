// Command benchtable turns the output of the cache benchmarks
// (`go test -bench . -benchmem ./cache/`) into one Markdown table shaped
// like the users' serialization benchmark: a section per struct size, a
// row per codec and operation, one row per target (sluice, redis) side by
// side. Repeated runs of a benchmark (-count) are reduced to their median.
//
// Usage: benchtable [file ...]  (standard input when no file is named)
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// result is one measured line.
type result struct {
	iters                   int64
	nsPerOp, bPerOp, allocs float64
	hasMem                  bool
	stored                  float64 // the stored-B metric: bytes a value takes in Redis
	hasStored               bool
}

// row is one benchmark on one target, with every run of it.
type row struct {
	runs []result
}

var procSuffix = regexp.MustCompile(`-\d+$`)

func main() {
	var inputs []io.Reader
	for _, name := range os.Args[1:] {
		f, err := os.Open(name)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		defer f.Close()
		inputs = append(inputs, f)
	}
	if len(inputs) == 0 {
		inputs = append(inputs, os.Stdin)
	}
	t := newTable()
	for _, in := range inputs {
		if err := t.read(in); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	if len(t.order) == 0 {
		fmt.Fprintln(os.Stderr, "benchtable: no benchmark results in the input")
		os.Exit(1)
	}
	t.write(os.Stdout)
}

type table struct {
	sections []string                   // in order of first appearance
	order    map[string][]string        // section -> benchmark names
	targets  []string                   // in order of first appearance
	rows     map[[2]string]*row         // (name, target) -> runs
	seen     map[string]map[string]bool // section -> names present
	last     map[[2]string]string       // (section, target) -> name added last
}

func newTable() *table {
	return &table{order: map[string][]string{}, rows: map[[2]string]*row{}, seen: map[string]map[string]bool{}, last: map[[2]string]string{}}
}

// read parses lines like
//
//	BenchmarkCache/redis/JSON_Set_Small-2   2000   76117 ns/op   395 B/op   9 allocs/op
func (t *table) read(in io.Reader) error {
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		parts := strings.SplitN(procSuffix.ReplaceAllString(f[0], ""), "/", 3)
		if len(parts) != 3 {
			continue // not a cache benchmark (no target level)
		}
		group, target, name := parts[0], parts[1], parts[2]
		iters, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			continue
		}
		var r result
		r.iters = iters
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return fmt.Errorf("benchtable: %q: %v", sc.Text(), err)
			}
			switch f[i+1] {
			case "ns/op":
				r.nsPerOp = v
			case "B/op":
				r.bPerOp, r.hasMem = v, true
			case "allocs/op":
				r.allocs = v
			case "stored-B":
				r.stored, r.hasStored = v, true
			}
		}
		t.add(sectionOf(group, name), target, name, r)
	}
	return sc.Err()
}

// sectionOf names the table section of a benchmark: its struct size for
// the single-value benchmarks, a batch heading for the batch ones.
func sectionOf(group, name string) string {
	size := name[strings.LastIndexByte(name, '_')+1:]
	switch group {
	case "BenchmarkBatch":
		return "Batch of 100, " + size + " (per value)"
	case "BenchmarkCodec":
		return "Codec only (no Redis), " + size
	}
	return size + " Struct"
}

func (t *table) add(section, target, name string, r result) {
	if _, ok := t.seen[section]; !ok {
		t.sections = append(t.sections, section)
		t.seen[section] = map[string]bool{}
	}
	if !t.seen[section][name] {
		// A name one target has and an earlier one skipped goes after
		// its predecessor on its own target, keeping the run's order.
		t.seen[section][name] = true
		names := t.order[section]
		at := len(names)
		if prev, ok := t.last[[2]string{section, target}]; ok {
			at = slices.Index(names, prev) + 1
		}
		t.order[section] = slices.Insert(names, at, name)
	}
	t.last[[2]string{section, target}] = name
	if !slices.Contains(t.targets, target) {
		t.targets = append(t.targets, target)
	}
	key := [2]string{name, target}
	if t.rows[key] == nil {
		t.rows[key] = &row{}
	}
	t.rows[key].runs = append(t.rows[key].runs, r)
}

func (t *table) write(w io.Writer) {
	fmt.Fprintln(w, "| Benchmark | Target | Iterations | Time (ns/op) | Alloc (B/op) | Allocs/op | Stored (B) |")
	fmt.Fprintln(w, "| :-- | :-- | --: | --: | --: | --: | --: |")
	for i, s := range t.sections {
		if i > 0 {
			fmt.Fprintln(w, "| | | | | | | |")
		}
		fmt.Fprintf(w, "| **%s** | | | | | | |\n", s)
		for _, name := range t.order[s] {
			for _, tg := range t.targets {
				r := t.rows[[2]string{name, tg}]
				if r == nil {
					continue
				}
				m := r.median()
				mem := "–"
				allocs := "–"
				if m.hasMem {
					mem = group(m.bPerOp)
					allocs = group(m.allocs)
				}
				stored := ""
				if m.hasStored {
					stored = group(m.stored)
				}
				fmt.Fprintf(w, "| `%s` | %s | %s | %s | %s | %s | %s |\n", name, tg, group(float64(m.iters)), group(m.nsPerOp), mem, allocs, stored)
			}
		}
	}
}

// median returns the run with the median time.
func (r *row) median() result {
	runs := slices.Clone(r.runs)
	slices.SortFunc(runs, func(a, b result) int {
		switch {
		case a.nsPerOp < b.nsPerOp:
			return -1
		case a.nsPerOp > b.nsPerOp:
			return 1
		}
		return 0
	})
	return runs[len(runs)/2]
}

// group formats v rounded to an integer with thousands separators
// (76117 -> "76,117"); values under 10 keep one decimal.
func group(v float64) string {
	if v < 10 && v != float64(int64(v)) {
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	s := strconv.FormatInt(int64(v+0.5), 10)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}
