package main

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/dubbogo-lb/lb/samples/lbsim/sim"
)

// Layout of a figure: share panels, cols to a row, then one row with
// throughput, mean and p99 latency.
const (
	cols       = 3
	panelW     = 5.2 * vg.Inch
	panelH     = 3.2 * vg.Inch
	headerH    = 0.9 * vg.Inch
	lineWidth  = 1.4
	markerGray = 140 // grey level of the scripted-change lines
)

// providerColors are distinct enough for ten providers.
var providerColors = []color.Color{
	color.RGBA{31, 119, 180, 255}, color.RGBA{255, 127, 14, 255}, color.RGBA{44, 160, 44, 255},
	color.RGBA{214, 39, 40, 255}, color.RGBA{148, 103, 189, 255}, color.RGBA{140, 86, 75, 255},
	color.RGBA{227, 119, 194, 255}, color.RGBA{127, 127, 127, 255}, color.RGBA{188, 189, 34, 255},
	color.RGBA{23, 190, 207, 255},
}

func init() {
	// Sans-serif reads better at small sizes than the default serif.
	plot.DefaultFont = font.Font{Typeface: "Liberation", Variant: "Sans"}
}

func providerColor(i int) color.Color { return providerColors[i%len(providerColors)] }

// writePlot draws the figure of one scenario to path (.png or .svg).
func writePlot(path string, sc sim.Scenario, results []*sim.Result) error {
	if len(results) == 0 {
		return fmt.Errorf("no results")
	}
	shareRows := (len(results) + cols - 1) / cols
	rows := shareRows + 1
	if sc.Failure != nil {
		rows++
	}
	grid := make([][]*plot.Plot, rows)
	for i := range grid {
		grid[i] = make([]*plot.Plot, cols)
	}
	for i, r := range results {
		grid[i/cols][i%cols] = sharePlot(r)
	}
	grid[shareRows][0] = seriesPlot(results, "throughput", "calls/s", func(b *sim.Bucket) float64 { return b.QPS() },
		func(r *sim.Result) string { return fmt.Sprintf("%.0f/s", r.Total.QPS()) })
	grid[shareRows][1] = seriesPlot(results, "mean latency", "ms", func(b *sim.Bucket) float64 { return msOf(b.Mean) },
		func(r *sim.Result) string { return fmt.Sprintf("%.2f ms", msOf(r.Total.Mean)) })
	grid[shareRows][2] = seriesPlot(results, "p99 latency", "ms", func(b *sim.Bucket) float64 { return msOf(b.P99) },
		func(r *sim.Result) string { return fmt.Sprintf("%.2f ms", msOf(r.Total.P99)) })
	if sc.Failure != nil {
		failurePlots(grid[shareRows+1], &sc, results)
	}

	w, h := cols*panelW, vg.Length(len(grid))*panelH+headerH
	var canvas vg.CanvasWriterTo
	switch filepath.Ext(path) {
	case ".svg":
		canvas = vgsvg.New(w, h)
	default:
		canvas = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(110), vgimg.UseBackgroundColor(color.White))}
	}
	dc := draw.New(canvas)
	header(dc, sc, results[0].Providers)
	body := dc
	body.Max.Y -= headerH
	tiles := draw.Tiles{Rows: len(grid), Cols: cols, PadX: vg.Inch / 5, PadY: vg.Inch / 5,
		PadTop: vg.Inch / 10, PadBottom: vg.Inch / 10, PadLeft: vg.Inch / 10, PadRight: vg.Inch / 5}
	cells := plot.Align(grid, tiles, body)
	for i, row := range grid {
		for j, p := range row {
			if p != nil {
				p.Draw(cells[i][j])
			}
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := canvas.WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// header writes the scenario's title across the top of the figure and,
// under it, the colour of each provider in the share panels.
func header(dc draw.Canvas, sc sim.Scenario, providers []string) {
	sty := draw.TextStyle{Color: color.Black, Font: plot.DefaultFont, Handler: plot.DefaultTextHandler,
		XAlign: draw.XCenter, YAlign: draw.YTop}
	sty.Font.Size = 15
	title := fmt.Sprintf("%s — %s", sc.Name, sc.Title)
	y := dc.Max.Y - vg.Inch/10
	dc.FillText(sty, vg.Point{X: (dc.Min.X + dc.Max.X) / 2, Y: y}, title)

	sty.Font.Size = 12
	sty.XAlign, sty.YAlign = draw.XLeft, draw.YCenter
	swatch, gap := vg.Inch/3, vg.Inch/4
	widths := make([]vg.Length, len(providers))
	total := -gap
	for i, name := range providers {
		widths[i] = swatch + vg.Inch/12 + sty.Width(name)
		total += widths[i] + gap
	}
	x := max((dc.Min.X+dc.Max.X-total)/2, dc.Min.X)
	y -= vg.Inch / 2
	for i, name := range providers {
		ls := draw.LineStyle{Color: providerColor(i), Width: vg.Points(3)}
		dc.StrokeLine2(ls, x, y, x+swatch, y)
		dc.FillText(sty, vg.Point{X: x + swatch + vg.Inch/12, Y: y}, name)
		x += widths[i] + gap
	}
}

// duration is the simulated time of r.
func duration(r *sim.Result) time.Duration { return r.Total.End }

func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// bucketMid is the x coordinate of a bucket: its middle, in seconds.
func bucketMid(b *sim.Bucket) float64 { return (b.Start + b.End).Seconds() / 2 }

// sharePlot shows each provider's share of the calls over time under one
// balancer.
func sharePlot(r *sim.Result) *plot.Plot {
	p := newPlot(fmt.Sprintf("%s — share of calls", r.Label()), "% of calls", duration(r))
	p.Y.Min, p.Y.Max = 0, 100
	addMarks(p, r.Marks, 0, 100)
	for i := range r.Providers {
		xy := make(plotter.XYs, 0, len(r.Buckets))
		for j := range r.Buckets {
			b := &r.Buckets[j]
			if b.Calls == 0 {
				continue
			}
			xy = append(xy, plotter.XY{X: bucketMid(b), Y: 100 * b.Share(i)})
		}
		l, err := plotter.NewLine(xy)
		if err != nil {
			continue // no calls at all: nothing to draw
		}
		l.Color = providerColor(i)
		l.Width = vg.Points(lineWidth)
		p.Add(l)
	}
	if r.Note != "" {
		p.Title.Text += "\n(" + r.Note + ")"
	}
	return p
}

// seriesPlot draws one line per balancer of value over time, labelled with
// the whole run's figure.
func seriesPlot(results []*sim.Result, title, unit string, value func(*sim.Bucket) float64, total func(*sim.Result) string) *plot.Plot {
	p := newPlot(title, unit, duration(results[0]))
	p.Y.Min = 0
	p.Legend.Top = true
	p.Legend.TextStyle.Font.Size = 9
	top := 0.0
	for k, r := range results {
		xy := make(plotter.XYs, 0, len(r.Buckets))
		for j := range r.Buckets {
			b := &r.Buckets[j]
			if b.Calls == 0 {
				continue
			}
			v := value(b)
			top = max(top, v)
			xy = append(xy, plotter.XY{X: bucketMid(b), Y: v})
		}
		l, err := plotter.NewLine(xy)
		if err != nil {
			continue
		}
		l.Color = plotutil.Color(k)
		l.Width = vg.Points(lineWidth)
		l.Dashes = plotutil.Dashes(k / len(plotutil.DefaultColors))
		p.Add(l)
		p.Legend.Add(fmt.Sprintf("%s (%s)", r.Label(), total(r)), l)
	}
	// Room above the lines for the legend.
	p.Y.Max = top * (1.15 + 0.09*float64(len(results)))
	addMarks(p, results[0].Marks, 0, p.Y.Max)
	return p
}

// failurePlots fills row with the failed first attempts per second without
// outlier ejection (dubbo-go's balancers have none) and with it, and the
// failing provider's share with it.
func failurePlots(row []*plot.Plot, sc *sim.Scenario, results []*sim.Result) {
	var off, on []*sim.Result
	for _, r := range results {
		if r.EjectionOff || !sim.Ours(r.Balancer) {
			off = append(off, r)
		} else {
			on = append(on, r)
		}
	}
	failed := func(b *sim.Bucket) float64 {
		if b.Calls == 0 {
			return 0
		}
		return 100 * float64(b.Errors) / float64(b.Calls)
	}
	during := func(r *sim.Result) string {
		ff := r.FailureFigures(sc)
		if ff.During.Calls == 0 {
			return "no call"
		}
		return fmt.Sprintf("%.2f%% failed", 100*float64(ff.During.Errors)/float64(ff.During.Calls))
	}
	if len(off) > 0 {
		row[0] = seriesPlot(off, "failed first attempts, ejection off", "% of calls", failed, during)
	}
	if len(on) > 0 {
		row[1] = seriesPlot(on, "failed first attempts, ejection on", "% of calls", failed, during)
		p := sc.Failure.Provider
		row[2] = seriesPlot(on, fmt.Sprintf("share of %s, ejection on", results[0].Providers[p]), "% of calls",
			func(b *sim.Bucket) float64 { return 100 * b.Share(p) },
			func(r *sim.Result) string {
				return fmt.Sprintf("%.2f%% while failing", 100*r.FailureFigures(sc).During.Share(p))
			})
	}
}

func newPlot(title, yLabel string, duration time.Duration) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = 12
	p.X.Label.Text = "simulated time (s)"
	p.Y.Label.Text = yLabel
	p.X.Min, p.X.Max = 0, duration.Seconds()
	p.X.Tick.Marker = secondTicks{}
	p.Y.Tick.Marker = plainTicks{}
	p.Add(plotter.NewGrid())
	return p
}

// plainTicks are gonum's default ticks labelled without trailing zeros
// ("25000", not "25000.00").
type plainTicks struct{}

// Ticks returns the default ticks between lo and hi with plain labels.
func (plainTicks) Ticks(lo, hi float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(lo, hi)
	for i := range ticks {
		if ticks[i].Label != "" {
			ticks[i].Label = strconv.FormatFloat(ticks[i].Value, 'f', -1, 64)
		}
	}
	return ticks
}

// secondTicks marks time axes at round numbers of seconds.
type secondTicks struct{}

// Ticks returns about five labelled ticks between min and max.
func (secondTicks) Ticks(lo, hi float64) []plot.Tick {
	step := 1.0
	for _, s := range []float64{0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600} {
		step = s
		if (hi-lo)/s <= 8 {
			break
		}
	}
	var ticks []plot.Tick
	for x := math.Ceil(lo/step) * step; x <= hi+step/1e6; x += step {
		ticks = append(ticks, plot.Tick{Value: x, Label: strconv.FormatFloat(x, 'f', -1, 64)})
	}
	return ticks
}

// addMarks draws a dashed vertical line at each scripted change.
func addMarks(p *plot.Plot, marks []sim.Mark, lo, hi float64) {
	for _, m := range marks {
		x := m.At.Seconds()
		l, err := plotter.NewLine(plotter.XYs{{X: x, Y: lo}, {X: x, Y: hi}})
		if err != nil {
			continue
		}
		l.Color = color.Gray{Y: markerGray}
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(l)
	}
}
