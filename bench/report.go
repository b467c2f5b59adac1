package bench

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// CSVHeader is the header of results.csv.
var CSVHeader = []string{"server", "suite", "test", "param", "value", "rounds", "rps", "avg_ms", "p50_ms", "p95_ms", "p99_ms", "max_ms"}

func fmtF(x float64, prec int) string {
	if math.IsNaN(x) {
		return ""
	}
	return strconv.FormatFloat(x, 'f', prec, 64)
}

func measurementFields(m Measurement) []string {
	return []string{fmtF(m.RPS, 2), fmtF(m.AvgMs, 3), fmtF(m.P50Ms, 3), fmtF(m.P95Ms, 3), fmtF(m.P99Ms, 3), fmtF(m.MaxMs, 3)}
}

func valueField(r Result) string {
	if r.Param == "" {
		return ""
	}
	return strconv.Itoa(r.Value)
}

// WriteResultsCSV writes one row per server × test × parameter (medians).
func WriteResultsCSV(w io.Writer, results []Result) error {
	cw := csv.NewWriter(w)
	cw.Write(CSVHeader)
	for _, r := range results {
		rec := append([]string{r.Server, r.Suite, r.Test, r.Param, valueField(r), strconv.Itoa(r.Rounds)}, measurementFields(r.Measurement)...)
		cw.Write(rec)
	}
	cw.Flush()
	return cw.Error()
}

// WriteRoundsCSV writes every round's numbers (what the medians came from).
func WriteRoundsCSV(w io.Writer, results []Result) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"server", "suite", "test", "param", "value", "round", "rps", "avg_ms", "p50_ms", "p95_ms", "p99_ms", "max_ms"})
	for _, r := range results {
		for i, m := range r.PerRound {
			rec := append([]string{r.Server, r.Suite, r.Test, r.Param, valueField(r), strconv.Itoa(i + 1)}, measurementFields(m)...)
			cw.Write(rec)
		}
	}
	cw.Flush()
	return cw.Error()
}

// Pair is a test measured on both servers.
type Pair struct {
	Suite, Test, Param string
	Value              int
	Target, Reference  *Result
}

// Pairs matches target and reference results by test and parameter, in the
// order the tests first appear.
func Pairs(results []Result, target, reference string) []Pair {
	idx := map[string]int{}
	var out []Pair
	for i := range results {
		r := &results[i]
		k := r.Key()
		j, ok := idx[k]
		if !ok {
			j = len(out)
			idx[k] = j
			out = append(out, Pair{Suite: r.Suite, Test: r.Test, Param: r.Param, Value: r.Value})
		}
		switch r.Server {
		case target:
			out[j].Target = r
		case reference:
			out[j].Reference = r
		}
	}
	return out
}

func (p Pair) title() string {
	if p.Param == "" {
		return p.Test
	}
	return fmt.Sprintf("%s, %s=%d", p.Test, p.Param, p.Value)
}

func fmtRatio(a, b float64) string {
	r := Ratio(a, b)
	if math.IsNaN(r) || math.IsInf(r, 0) {
		return "n/a"
	}
	return fmt.Sprintf("%.1f%%", r*100)
}

// WriteMarkdown writes report.md.
func WriteMarkdown(w io.Writer, rep *Report) error {
	cfg := rep.Config
	tn, rn := cfg.TargetName, cfg.ReferenceName
	var b strings.Builder
	fmt.Fprintf(&b, "# %s vs %s: redis-benchmark comparison\n\n", tn, rn)
	fmt.Fprintf(&b, "**Date:** %s  \n", rep.Started.Format("2006-01-02 15:04 MST"))
	if cfg.Label != "" {
		fmt.Fprintf(&b, "**Machine:** %s  \n", cfg.Label)
	}
	env := rep.Env
	if env["cpu"] != "" || env["cpus"] != "" {
		fmt.Fprintf(&b, "**CPU:** %s × %s logical CPUs, %s, kernel %s, %s  \n", env["cpu"], env["cpus"], env["os"], env["kernel"], env["go"])
	}
	fmt.Fprintf(&b, "**%s:** %s (%s)  \n", tn, orDash(env["target_version"]), env["target_addr"])
	fmt.Fprintf(&b, "**%s:** %s (%s)  \n", rn, orDash(env["reference_version"]), env["reference_addr"])
	fmt.Fprintf(&b, "**Suites:** %s, %d rounds, ~%.1f s per run, total time %s\n\n", cfg.Suite, cfg.Rounds, cfg.Seconds, rep.Elapsed.Round(time.Second))

	fmt.Fprintf(&b, "Each case runs %d rounds interleaved (%s, %s, %s, %s, …); every number below is the median over the rounds "+
		"(each metric on its own). redis-benchmark (%s) runs with `--csv -r %d` and `-n` chosen from a short calibration run so one test lasts about %.1f s. ",
		cfg.Rounds, tn, rn, tn, rn, orDash(env["redis_benchmark"]), cfg.Keyspace, cfg.Seconds)
	for _, r := range rep.Results {
		if r.Suite == "mixed" {
			fmt.Fprintf(&b, "Mixed tests use sluice-bench's go-redis driver (50 workers, 16-byte keys, 64-byte values, prefilled keyspace of %d keys). ", cfg.Keyspace)
			break
		}
	}
	fmt.Fprintf(&b, "Ratio = %s / %s; ✓ marks a metric where %s is at least as good as %s (higher throughput, lower latency).\n\n", tn, rn, tn, rn)

	pairs := Pairs(rep.Results, tn, rn)
	var ratios []float64
	b.WriteString("## Summary\n\n")
	fmt.Fprintf(&b, "| Test | %s (req/s) | %s (req/s) | Ratio | %s p99 | %s p99 |\n|---|---:|---:|---:|---:|---:|\n", tn, rn, tn, rn)
	for _, p := range pairs {
		if p.Target == nil || p.Reference == nil {
			continue
		}
		r := Ratio(p.Target.RPS, p.Reference.RPS)
		if !math.IsNaN(r) {
			ratios = append(ratios, r)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %.3f ms | %.3f ms |\n", p.title(), groupDigits(p.Target.RPS), groupDigits(p.Reference.RPS),
			fmtRatio(p.Target.RPS, p.Reference.RPS), p.Target.P99Ms, p.Reference.P99Ms)
	}
	if len(ratios) > 0 {
		var sum float64
		for _, r := range ratios {
			sum += r
		}
		fmt.Fprintf(&b, "\n%s reaches **%.1f%%** of %s's throughput on average over %d tests (min %.1f%%, max %.1f%%).\n",
			tn, sum/float64(len(ratios))*100, rn, len(ratios), minOf(ratios)*100, maxOf(ratios)*100)
	}
	b.WriteString("\n")

	var charts []string
	for _, a := range rep.Artifacts {
		if strings.HasSuffix(a, ".png") {
			charts = append(charts, a)
		}
	}
	if len(charts) > 0 {
		b.WriteString("## Charts\n\n")
		for _, c := range charts {
			fmt.Fprintf(&b, "![%s](%s)\n\n", strings.TrimSuffix(c, ".png"), c)
		}
	}

	suite := ""
	for _, p := range pairs {
		if p.Suite != suite {
			suite = p.Suite
			fmt.Fprintf(&b, "## Suite: %s\n\n", suite)
		}
		fmt.Fprintf(&b, "### %s\n\n", p.title())
		if x := p.Target; x != nil && x.Command != "" {
			fmt.Fprintf(&b, "`%s`\n\n", x.Command)
		} else if x := p.Reference; x != nil && x.Command != "" {
			fmt.Fprintf(&b, "`%s`\n\n", x.Command)
		}
		fmt.Fprintf(&b, "| Metric | %s | %s | Ratio |\n|---|---:|---:|---:|\n", tn, rn)
		t, r := p.Target, p.Reference
		get := func(x *Result, f func(Measurement) float64) float64 {
			if x == nil {
				return math.NaN()
			}
			return f(x.Measurement)
		}
		rows := []struct {
			name   string
			f      func(Measurement) float64
			higher bool
		}{
			{"Throughput (req/s)", func(m Measurement) float64 { return m.RPS }, true},
			{"Average latency", func(m Measurement) float64 { return m.AvgMs }, false},
			{"p50 (median)", func(m Measurement) float64 { return m.P50Ms }, false},
			{"p95", func(m Measurement) float64 { return m.P95Ms }, false},
			{"p99", func(m Measurement) float64 { return m.P99Ms }, false},
			{"Max latency", func(m Measurement) float64 { return m.MaxMs }, false},
		}
		for _, row := range rows {
			a, c := get(t, row.f), get(r, row.f)
			cell := func(x float64) string {
				if math.IsNaN(x) {
					return "failed"
				}
				if row.higher {
					return groupDigits(x)
				}
				return fmt.Sprintf("%.3f ms", x)
			}
			mark := ""
			if !math.IsNaN(a) && !math.IsNaN(c) && ((row.higher && a >= c) || (!row.higher && a <= c)) {
				mark = " ✓"
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s%s |\n", row.name, cell(a), cell(c), fmtRatio(a, c), mark)
		}
		if t != nil && r != nil {
			fmt.Fprintf(&b, "\nRounds: %s %d, %s %d; throughput per round: %s %s; %s %s.\n", tn, t.Rounds, rn, r.Rounds,
				tn, roundList(t.PerRound), rn, roundList(r.PerRound))
		}
		b.WriteString("\n")
	}

	if len(rep.Skipped) > 0 {
		fmt.Fprintf(&b, "## Skipped (not implemented by %s)\n\n", tn)
		for _, s := range rep.Skipped {
			fmt.Fprintf(&b, "- %s\n", s)
		}
		b.WriteString("\n")
	}
	if len(rep.Failures) > 0 {
		b.WriteString("## Failed runs\n\n")
		for _, f := range rep.Failures {
			fmt.Fprintf(&b, "- %s, %s: %s\n", f.Server, f.Case, f.Err)
		}
		b.WriteString("\n")
	}
	if len(rep.Requests) > 0 {
		b.WriteString("## Requests per run (-n)\n\n")
		keys := make([]string, 0, len(rep.Requests))
		for k := range rep.Requests {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(&b, "- %s: %s\n", k, groupDigits(float64(rep.Requests[k])))
		}
		b.WriteString("\n")
	}
	b.WriteString("Raw numbers: [results.csv](results.csv) (medians), [rounds.csv](rounds.csv) (every round).\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func roundList(ms []Measurement) string {
	parts := make([]string, len(ms))
	for i, m := range ms {
		parts[i] = groupDigits(m.RPS)
	}
	return strings.Join(parts, " / ")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func minOf(xs []float64) float64 {
	m := math.Inf(1)
	for _, x := range xs {
		m = math.Min(m, x)
	}
	return m
}

func maxOf(xs []float64) float64 {
	m := math.Inf(-1)
	for _, x := range xs {
		m = math.Max(m, x)
	}
	return m
}

// WriteAll writes results.csv, rounds.csv, the charts and report.md into dir.
func (rep *Report) WriteAll(dir string) error {
	write := func(name string, f func(io.Writer) error) error {
		fh, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		if err := f(fh); err != nil {
			fh.Close()
			return fmt.Errorf("%s: %w", name, err)
		}
		return fh.Close()
	}
	if err := write("results.csv", func(w io.Writer) error { return WriteResultsCSV(w, rep.Results) }); err != nil {
		return err
	}
	if err := write("rounds.csv", func(w io.Writer) error { return WriteRoundsCSV(w, rep.Results) }); err != nil {
		return err
	}
	charts, err := WriteCharts(dir, rep.Results, rep.Config.TargetName, rep.Config.ReferenceName)
	if err != nil {
		return err
	}
	rep.Artifacts = append([]string{"results.csv", "rounds.csv"}, charts...)
	if err := write("report.md", func(w io.Writer) error { return WriteMarkdown(w, rep) }); err != nil {
		return err
	}
	rep.Artifacts = append(rep.Artifacts, "report.md")
	return nil
}
