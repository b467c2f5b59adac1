package bench

import (
	"context"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// SweetSpotConfig sweeps workers × pipeline size × pipeline delay with the
// throughput driver; every worker count also runs once without
// autopipelining, the baseline of the multipliers.
type SweetSpotConfig struct {
	Base    ThroughputConfig
	Workers []int
	Sizes   []int
	Delays  []time.Duration
	Log     io.Writer // one line per finished run
}

// SweetSpotRow is one configuration's result.
type SweetSpotRow struct {
	ThroughputResult
	VsBaseline float64 `json:"vs_baseline"` // ops/s over the no-autopipeline run with the same workers
}

// SweetSpotReport is the sweep's outcome.
type SweetSpotReport struct {
	Rows         []SweetSpotRow `json:"rows"`
	Best         *SweetSpotRow  `json:"best"`          // fastest autopipelined configuration
	BestBaseline *SweetSpotRow  `json:"best_baseline"` // fastest run without autopipelining
	Multiplier   float64        `json:"multiplier"`    // Best over the baseline with the same workers
	OverBest     float64        `json:"multiplier_over_best_baseline"`
}

// ParseInts parses "10,50,100".
func ParseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("bad positive integer %q", f)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("empty list %q", s)
	}
	return out, nil
}

// ParseDurations parses "0,100us,1ms" (a bare 0 is allowed).
func ParseDurations(s string) ([]time.Duration, error) {
	var out []time.Duration
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if f == "0" {
			out = append(out, 0)
			continue
		}
		d, err := time.ParseDuration(f)
		if err != nil || d < 0 {
			return nil, fmt.Errorf("bad duration %q", f)
		}
		out = append(out, d)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("empty list %q", s)
	}
	return out, nil
}

// RunSweetSpot runs the sweep.
func RunSweetSpot(ctx context.Context, cfg SweetSpotConfig) (*SweetSpotReport, error) {
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	rep := &SweetSpotReport{}
	total := len(cfg.Workers) * (1 + len(cfg.Sizes)*len(cfg.Delays))
	n := 0
	prefill := cfg.Base.Prefill
	run := func(tc ThroughputConfig) (ThroughputResult, error) {
		n++
		tc.Prefill = prefill
		prefill = false // once is enough: the keys stay
		res, err := RunThroughput(ctx, tc)
		if err != nil {
			return res, err
		}
		mode := "no autopipeline"
		if tc.Autopipeline {
			mode = fmt.Sprintf("autopipeline size=%d delay=%s", tc.PipelineSize, tc.PipelineDelay)
		}
		fmt.Fprintf(cfg.Log, "[%d/%d] workers=%d %s: %s ops/s, p99 %.1f µs, errors %d\n",
			n, total, tc.Workers, mode, groupDigits(res.OpsPerSec), res.P99Us, res.Errors)
		return res, nil
	}
	for _, w := range cfg.Workers {
		tc := cfg.Base
		tc.Workers = w
		tc.Autopipeline = false
		base, err := run(tc)
		if err != nil {
			return rep, err
		}
		rep.Rows = append(rep.Rows, SweetSpotRow{ThroughputResult: base, VsBaseline: 1})
		for _, size := range cfg.Sizes {
			for _, d := range cfg.Delays {
				tc := cfg.Base
				tc.Workers, tc.Autopipeline, tc.PipelineSize, tc.PipelineDelay = w, true, size, d
				res, err := run(tc)
				if err != nil {
					return rep, err
				}
				rep.Rows = append(rep.Rows, SweetSpotRow{ThroughputResult: res, VsBaseline: Ratio(res.OpsPerSec, base.OpsPerSec)})
			}
		}
	}
	for i := range rep.Rows {
		r := &rep.Rows[i]
		if r.Autopipeline {
			if rep.Best == nil || r.OpsPerSec > rep.Best.OpsPerSec {
				rep.Best = r
			}
		} else if rep.BestBaseline == nil || r.OpsPerSec > rep.BestBaseline.OpsPerSec {
			rep.BestBaseline = r
		}
	}
	if rep.Best != nil {
		rep.Multiplier = rep.Best.VsBaseline
		rep.OverBest = Ratio(rep.Best.OpsPerSec, rep.BestBaseline.OpsPerSec)
	}
	return rep, nil
}

// Write prints the table and the verdict.
func (rep *SweetSpotReport) Write(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "workers\tmode\tsize\tdelay\tops/s\tµs/op\tp50 µs\tp99 µs\terrors\tvs no-AP\t")
	for _, r := range rep.Rows {
		mode, size, delay := "plain", "-", "-"
		if r.Autopipeline {
			mode, size, delay = "autopipeline", strconv.Itoa(r.PipelineSize), r.PipelineDelay
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%.2f\t%.1f\t%.1f\t%d\t%.2fx\t\n",
			r.Workers, mode, size, delay, groupDigits(r.OpsPerSec), r.UsPerOp, r.P50Us, r.P99Us, r.Errors, r.VsBaseline)
	}
	tw.Flush()
	if rep.Best == nil {
		return
	}
	b, bb := rep.Best, rep.BestBaseline
	fmt.Fprintf(w, "\nBest: -workers %d -autopipeline -pipeline-size %d -pipeline-delay %s\n", b.Workers, b.PipelineSize, b.PipelineDelay)
	fmt.Fprintf(w, "      %s ops/s, %.2f µs/op, p99 %.1f µs, error rate %.2f%%\n", groupDigits(b.OpsPerSec), b.UsPerOp, b.P99Us, b.ErrorRate*100)
	fmt.Fprintf(w, "      %s over no autopipelining with %d workers (same run)", fmtX(rep.Multiplier), b.Workers)
	fmt.Fprintf(w, "; %s over the best plain run (%s ops/s with %d workers)\n", fmtX(rep.OverBest), groupDigits(bb.OpsPerSec), bb.Workers)
}

func fmtX(x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return "n/a"
	}
	return fmt.Sprintf("%.1fx", x)
}
