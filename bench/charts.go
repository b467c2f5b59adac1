package bench

import (
	"fmt"
	"image/color"
	"math"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

var (
	targetColor    = color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff} // blue
	referenceColor = color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff} // red
)

// sweeps are the suites drawn as lines over their swept parameter.
var sweeps = []struct {
	suite, param, xlabel, file string
}{
	{"concurrency", "clients", "parallel clients (-c)", "clients"},
	{"value-size", "value_size", "value size, bytes (-d)", "value_size"},
	{"pipeline", "pipeline", "pipeline depth (-P)", "pipeline"},
}

// WriteCharts draws the PNG charts for whatever results there are and
// returns their file names: throughput and p99 latency against clients,
// value size and pipeline depth (one line per server and test, both servers
// on the same axes), and bar charts of the unswept tests.
func WriteCharts(dir string, results []Result, target, reference string) ([]string, error) {
	var files []string
	for _, s := range sweeps {
		var rs []Result
		for _, r := range results {
			if r.Suite == s.suite && r.Param == s.param {
				rs = append(rs, r)
			}
		}
		if len(rs) == 0 {
			continue
		}
		for _, m := range []struct {
			name, ylabel string
			f            func(Measurement) float64
		}{
			{"throughput", "requests per second", func(m Measurement) float64 { return m.RPS }},
			{"p99", "p99 latency, ms", func(m Measurement) float64 { return m.P99Ms }},
		} {
			file := fmt.Sprintf("%s_vs_%s.png", m.name, s.file)
			title := fmt.Sprintf("%s vs %s: %s by %s", target, reference, m.name, s.xlabel)
			if err := lineChart(filepath.Join(dir, file), title, s.xlabel, m.ylabel, rs, m.f, target, reference); err != nil {
				return files, fmt.Errorf("%s: %w", file, err)
			}
			files = append(files, file)
		}
	}
	var flat []Result
	for _, r := range results {
		if r.Param == "" || r.Suite == "mixed" {
			flat = append(flat, r)
		}
	}
	if len(flat) > 0 {
		for _, m := range []struct {
			name, ylabel string
			f            func(Measurement) float64
		}{
			{"throughput", "requests per second", func(m Measurement) float64 { return m.RPS }},
			{"p99", "p99 latency, ms", func(m Measurement) float64 { return m.P99Ms }},
		} {
			file := m.name + "_summary.png"
			title := fmt.Sprintf("%s vs %s: %s", target, reference, m.name)
			if err := barChart(filepath.Join(dir, file), title, m.ylabel, flat, m.f, target, reference); err != nil {
				return files, fmt.Errorf("%s: %w", file, err)
			}
			files = append(files, file)
		}
	}
	return files, nil
}

func lineChart(path, title, xlabel, ylabel string, rs []Result, f func(Measurement) float64, target, reference string) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xlabel
	p.Y.Label.Text = ylabel
	p.X.Scale = plot.LogScale{}
	p.Y.Min = 0
	p.Legend.Top = true
	p.Add(plotter.NewGrid())

	// Series: server × test, in a stable order.
	type key struct{ server, test string }
	series := map[key]plotter.XYs{}
	var keys []key
	xs := map[int]bool{}
	for _, r := range rs {
		k := key{r.Server, r.Test}
		if _, ok := series[k]; !ok {
			keys = append(keys, k)
		}
		series[k] = append(series[k], plotter.XY{X: float64(r.Value), Y: f(r.Measurement)})
		xs[r.Value] = true
	}
	var ticks plot.ConstantTicks
	var xvals []int
	for x := range xs {
		xvals = append(xvals, x)
	}
	sort.Ints(xvals)
	for _, x := range xvals {
		ticks = append(ticks, plot.Tick{Value: float64(x), Label: strconv.Itoa(x)})
	}
	p.X.Tick.Marker = ticks
	p.X.Min, p.X.Max = float64(xvals[0])/1.3, float64(xvals[len(xvals)-1])*1.3
	ymax := 0.0
	for _, r := range rs {
		ymax = math.Max(ymax, f(r.Measurement))
	}
	p.Y.Max = ymax * 1.35 // headroom for the legend
	p.Y.Tick.Marker = humanTicks{}

	tests := map[string]int{}
	for _, k := range keys {
		if _, ok := tests[k.test]; !ok {
			tests[k.test] = len(tests)
		}
	}
	for _, k := range keys {
		pts := series[k]
		sort.Slice(pts, func(i, j int) bool { return pts[i].X < pts[j].X })
		line, scatter, err := plotter.NewLinePoints(pts)
		if err != nil {
			return err
		}
		c := color.Color(referenceColor)
		if k.server == target {
			c = targetColor
		}
		ti := tests[k.test]
		line.Color, scatter.Color = c, c
		line.Width = vg.Points(1.5)
		if ti%2 == 1 {
			line.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
		}
		scatter.Shape = shapes[ti%len(shapes)]
		scatter.Radius = vg.Points(3)
		p.Add(line, scatter)
		p.Legend.Add(k.server+" "+k.test, line, scatter)
	}
	return p.Save(7*vg.Inch, 4.5*vg.Inch, path)
}

var shapes = []draw.GlyphDrawer{draw.CircleGlyph{}, draw.TriangleGlyph{}, draw.BoxGlyph{}, draw.PyramidGlyph{}, draw.CrossGlyph{}}

func barChart(path, title, ylabel string, rs []Result, f func(Measurement) float64, target, reference string) error {
	type pair struct{ t, r float64 }
	var names []string
	vals := map[string]*pair{}
	for _, r := range rs {
		name := r.Test
		if i := strings.Index(name, " ("); i > 0 {
			name = name[:i]
		}
		if r.Suite != "default" && r.Suite != "commands" && r.Suite != "mixed" {
			name += " " + r.Suite
		}
		v, ok := vals[name]
		if !ok {
			v = &pair{math.NaN(), math.NaN()}
			vals[name] = v
			names = append(names, name)
		}
		switch r.Server {
		case target:
			v.t = f(r.Measurement)
		case reference:
			v.r = f(r.Measurement)
		}
	}
	tv, rv := make(plotter.Values, len(names)), make(plotter.Values, len(names))
	for i, n := range names {
		tv[i], rv[i] = zeroNaN(vals[n].t), zeroNaN(vals[n].r)
	}
	p := plot.New()
	p.Title.Text = title
	p.Y.Label.Text = ylabel
	p.Y.Min = 0
	p.Y.Tick.Marker = humanTicks{}
	p.Legend.Top = true
	p.Add(plotter.NewGrid())
	width := math.Max(6, 0.8*float64(len(names))+1.5)
	w := vg.Points(math.Min(40, width*72*0.6/float64(2*len(names))))
	tb, err := plotter.NewBarChart(tv, w)
	if err != nil {
		return err
	}
	rb, err := plotter.NewBarChart(rv, w)
	if err != nil {
		return err
	}
	tb.Color, rb.Color = targetColor, referenceColor
	tb.LineStyle.Width, rb.LineStyle.Width = 0, 0
	tb.Offset, rb.Offset = -w/2, w/2
	p.Add(tb, rb)
	p.Legend.Add(target, tb)
	p.Legend.Add(reference, rb)
	p.NominalX(names...)
	if len(names) > 4 {
		p.X.Tick.Label.Rotation = math.Pi / 4
		p.X.Tick.Label.XAlign = draw.XRight
		p.X.Tick.Label.YAlign = draw.YCenter
	}
	p.X.Min, p.X.Max = -0.6, float64(len(names))-0.4
	p.Y.Max = math.Max(maxOf(tv), maxOf(rv)) * 1.2 // headroom for the legend
	return p.Save(vg.Length(width)*vg.Inch, 4.5*vg.Inch, path)
}

func zeroNaN(x float64) float64 {
	if math.IsNaN(x) {
		return 0
	}
	return x
}

// humanTicks labels large values as 50k, 1.2M.
type humanTicks struct{}

func (humanTicks) Ticks(min, max float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(min, max)
	for i := range ticks {
		if ticks[i].Label == "" {
			continue
		}
		v := ticks[i].Value
		switch {
		case v == 0:
			ticks[i].Label = "0"
		case math.Abs(v) >= 1e6:
			ticks[i].Label = strconv.FormatFloat(v/1e6, 'f', -1, 64) + "M"
		case math.Abs(v) >= 1e3:
			ticks[i].Label = strconv.FormatFloat(v/1e3, 'f', -1, 64) + "k"
		}
	}
	return ticks
}
