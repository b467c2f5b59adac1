package bench

import (
	"encoding/csv"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Output in the format redis-benchmark 7.0 prints with --csv (see
// showLatencyReport in redis-benchmark.c), with the warning it writes when a
// server has no CONFIG command and the helper row of the LRANGE tests.
const sampleBenchmarkCSV = `WARNING: Could not fetch server CONFIG
"test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"
"SET","118343.19","0.236","0.024","0.231","0.263","0.687","1.543"
"GET","121065.38","0.228","0.032","0.231","0.263","0.311","0.831"
"LPUSH (needed to benchmark LRANGE)","90000.00","0.3","0.1","0.2","0.4","0.5","0.9"
"LRANGE_100 (first 100 elements)","50000.50","0.500","0.100","0.450","0.700","0.900","2.000"
`

func TestParseBenchmarkCSV(t *testing.T) {
	rows, err := ParseBenchmarkCSV(strings.NewReader(sampleBenchmarkCSV))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 {
		t.Fatalf("got %d rows, want 3 (helper row dropped): %+v", len(rows), rows)
	}
	want := BenchRow{Test: "SET", Measurement: Measurement{RPS: 118343.19, AvgMs: 0.236, P50Ms: 0.231, P95Ms: 0.263, P99Ms: 0.687, MaxMs: 1.543}}
	if rows[0] != want {
		t.Errorf("row 0 = %+v, want %+v", rows[0], want)
	}
	if rows[2].Test != "LRANGE_100 (first 100 elements)" || rows[2].RPS != 50000.5 {
		t.Errorf("row 2 = %+v", rows[2])
	}
	if _, err := ParseBenchmarkCSV(strings.NewReader("WARNING only\n")); err == nil {
		t.Error("no rows should be an error")
	}
	if _, err := ParseBenchmarkCSV(strings.NewReader(`"SET","1","2","3","4","5","6","7"` + "\n")); err == nil {
		t.Error("rows before the header should be an error")
	}
	bad := strings.Replace(sampleBenchmarkCSV, `"121065.38"`, `"fast"`, 1)
	if _, err := ParseBenchmarkCSV(strings.NewReader(bad)); err == nil {
		t.Error("a non-numeric rps should be an error")
	}
}

// sampleResults are the medians of a users' report (another server vs Redis).
func sampleResults() []Result {
	return []Result{
		{Server: "Sluice", Suite: "default", Test: "SET", Rounds: 3, Measurement: Measurement{118343.19, 0.236, 0.231, 0.263, 0.687, 1.543},
			PerRound: []Measurement{{RPS: 118000}, {RPS: 118343.19}, {RPS: 119000}}},
		{Server: "Sluice", Suite: "default", Test: "GET", Rounds: 3, Measurement: Measurement{121065.38, 0.228, 0.231, 0.263, 0.311, 0.831}},
		{Server: "Redis", Suite: "default", Test: "SET", Rounds: 3, Measurement: Measurement{160513.64, 0.190, 0.135, 0.407, 0.911, 9.103}},
		{Server: "Redis", Suite: "default", Test: "GET", Rounds: 3, Measurement: Measurement{188679.25, 0.148, 0.135, 0.255, 0.367, 0.495}},
		{Server: "Sluice", Suite: "concurrency", Test: "SET", Param: "clients", Value: 10, Rounds: 1, Measurement: Measurement{RPS: 50000, P99Ms: 1}},
		{Server: "Redis", Suite: "concurrency", Test: "SET", Param: "clients", Value: 10, Rounds: 1, Measurement: Measurement{RPS: 60000, P99Ms: 2}},
		{Server: "Sluice", Suite: "concurrency", Test: "SET", Param: "clients", Value: 100, Rounds: 1, Measurement: Measurement{RPS: 70000, P99Ms: 3}},
		{Server: "Redis", Suite: "concurrency", Test: "SET", Param: "clients", Value: 100, Rounds: 1, Measurement: Measurement{RPS: 80000, P99Ms: 4}},
	}
}

func TestWriteResultsCSV(t *testing.T) {
	var b strings.Builder
	if err := WriteResultsCSV(&b, sampleResults()); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(strings.NewReader(b.String())).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 9 {
		t.Fatalf("%d records, want header + 8", len(recs))
	}
	if strings.Join(recs[0], ",") != "server,suite,test,param,value,rounds,rps,avg_ms,p50_ms,p95_ms,p99_ms,max_ms" {
		t.Errorf("header %v", recs[0])
	}
	if got := strings.Join(recs[1], ","); got != "Sluice,default,SET,,,3,118343.19,0.236,0.231,0.263,0.687,1.543" {
		t.Errorf("row 1 = %s", got)
	}
	if got := strings.Join(recs[5], ","); got != "Sluice,concurrency,SET,clients,10,1,50000.00,0.000,0.000,0.000,1.000,0.000" {
		t.Errorf("row 5 = %s", got)
	}
	b.Reset()
	if err := WriteRoundsCSV(&b, sampleResults()); err != nil {
		t.Fatal(err)
	}
	recs, _ = csv.NewReader(strings.NewReader(b.String())).ReadAll()
	if len(recs) != 4 || recs[3][5] != "3" || recs[3][6] != "119000.00" {
		t.Errorf("rounds.csv = %v", recs)
	}
}

func TestWriteMarkdown(t *testing.T) {
	rep := &Report{
		Config:   DefaultCompareConfig(),
		Started:  time.Date(2026, 2, 10, 13, 20, 6, 0, time.UTC),
		Env:      map[string]string{"redis_benchmark": "redis-benchmark 7.0.15"},
		Results:  sampleResults(),
		Skipped:  []string{"LPUSH (ERR unknown command 'LPUSH')"},
		Failures: []Failure{{Server: "Sluice", Case: "commands mset", Err: "boom"}},
	}
	rep.Config.Label = "test machine"
	var b strings.Builder
	if err := WriteMarkdown(&b, rep); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, want := range []string{
		"# Sluice vs Redis",
		"**Machine:** test machine",
		"| Metric | Sluice | Redis | Ratio |",
		"### SET\n",
		"### SET, clients=10\n",
		// The ratios of the users' seed report, recomputed.
		"| Throughput (req/s) | 118,343 | 160,514 | 73.7% |",
		"| Throughput (req/s) | 121,065 | 188,679 | 64.2% |",
		"| Average latency | 0.236 ms | 0.190 ms | 124.2% |",
		"| p50 (median) | 0.231 ms | 0.135 ms | 171.1% |",
		"| p95 | 0.263 ms | 0.407 ms | 64.6% ✓ |",
		"| p99 | 0.687 ms | 0.911 ms | 75.4% ✓ |",
		"| Max latency | 1.543 ms | 9.103 ms | 17.0% ✓ |",
		"| p95 | 0.263 ms | 0.255 ms | 103.1% |",
		"| SET | 118,343 | 160,514 | 73.7% | 0.687 ms | 0.911 ms |",
		"throughput per round: Sluice 118,000 / 118,343 / 119,000",
		"LPUSH (ERR unknown command 'LPUSH')",
		"Sluice, commands mset: boom",
		"## Suite: concurrency",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	// Average of the four throughput ratios: 73.7, 64.2, 83.3, 87.5.
	if !strings.Contains(md, "**77.2%** of Redis's throughput on average over 4 tests") {
		t.Errorf("summary average wrong:\n%s", md)
	}
}

func TestPairs(t *testing.T) {
	ps := Pairs(sampleResults(), "Sluice", "Redis")
	if len(ps) != 4 {
		t.Fatalf("%d pairs, want 4", len(ps))
	}
	for _, p := range ps {
		if p.Target == nil || p.Reference == nil || p.Target.Test != p.Reference.Test || p.Target.Value != p.Reference.Value {
			t.Errorf("bad pair %+v", p)
		}
	}
	if ps[3].Value != 100 || ps[3].Target.RPS != 70000 {
		t.Errorf("pair 3 = %+v", ps[3])
	}
}

func TestWriteAllCharts(t *testing.T) {
	dir := t.TempDir()
	rep := &Report{Config: DefaultCompareConfig(), Env: map[string]string{}, Results: sampleResults()}
	if err := rep.WriteAll(dir); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"results.csv", "rounds.csv", "report.md", "throughput_vs_clients.png", "p99_vs_clients.png", "throughput_summary.png", "p99_summary.png"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if strings.HasSuffix(f, ".png") && !strings.HasPrefix(string(b), "\x89PNG\r\n") {
			t.Errorf("%s is not a PNG", f)
		}
	}
	md, _ := os.ReadFile(filepath.Join(dir, "report.md"))
	if !strings.Contains(string(md), "![throughput_vs_clients](throughput_vs_clients.png)") {
		t.Error("report.md does not show the charts")
	}
}

func TestSuiteCases(t *testing.T) {
	all, err := SuiteCases("all")
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, c := range all {
		count[c.Suite]++
	}
	want := map[string]int{"default": 1, "concurrency": 6, "value-size": 4, "pipeline": 3, "mixed": 2, "commands": len(benchmarkTests)}
	for s, n := range want {
		if count[s] != n {
			t.Errorf("suite %s has %d cases, want %d", s, count[s], n)
		}
	}
	cs, err := SuiteCases("pipeline, value-size")
	if err != nil || len(cs) != 7 || cs[2].Bench.Pipeline != 64 || cs[6].Bench.DataSize != 10000 {
		t.Errorf("SuiteCases(pipeline,value-size) = %+v, %v", cs, err)
	}
	if _, err := SuiteCases("nope"); err == nil {
		t.Error("unknown suite accepted")
	}
}

func TestBenchArgs(t *testing.T) {
	a := BenchArgs{Tests: "set,get", Requests: 1000, Clients: 50, DataSize: 3, Pipeline: 16, Keyspace: 100000}
	argv, err := a.argv("127.0.0.1:7000")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(argv, " "); got != "-h 127.0.0.1 -p 7000 -t set,get -n 1000 -c 50 -d 3 -P 16 --csv -r 100000" {
		t.Errorf("argv = %s", got)
	}
	if _, err := a.argv("nope"); err == nil {
		t.Error("bad address accepted")
	}
}
