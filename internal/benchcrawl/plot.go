package benchcrawl

import (
	"bufio"
	"fmt"
	"html"
	"io"
	"math"
	"os"
)

// plotSeries is one crawler's pages/s over time.
type plotSeries struct {
	name string
	pts  [][2]float64 // (seconds, pages/s)
}

// hLine is a horizontal reference line (the web's limit, the allowed rate).
type hLine struct {
	name  string
	value float64
}

// rates turns cumulative samples into (t, pages/s) points, one per interval.
func rates(s []Sample) [][2]float64 {
	var out [][2]float64
	for i := 1; i < len(s); i++ {
		dt := s[i].T - s[i-1].T
		if dt <= 0 {
			continue
		}
		out = append(out, [2]float64{s[i].T, float64(s[i].Pages-s[i-1].Pages) / dt})
	}
	return out
}

// niceStep returns a step of the form {1,2,5}×10^k that cuts [0,max] into
// at most about n intervals.
func niceStep(max float64, n int) float64 {
	if max <= 0 || n <= 0 {
		return 1
	}
	raw := max / float64(n)
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

var plotColors = []string{"#1f77b4", "#ff7f0e", "#2ca02c", "#8c564b", "#e377c2"}
var lineColors = []string{"#d62728", "#9467bd", "#7f7f7f"}

// writePlot draws the series and lines as an SVG document: pages/s against
// seconds since each crawler started, with axes, ticks, labels and a legend.
func writePlot(w io.Writer, title string, series []plotSeries, lines []hLine) error {
	const (
		W, H                     = 960, 520
		left, right, top, bottom = 80, 230, 50, 60
	)
	pw, ph := float64(W-left-right), float64(H-top-bottom)
	xmax, ymax := 1.0, 1.0
	for _, s := range series {
		for _, p := range s.pts {
			xmax, ymax = math.Max(xmax, p[0]), math.Max(ymax, p[1])
		}
	}
	for _, l := range lines {
		ymax = math.Max(ymax, l.value)
	}
	xstep, ystep := niceStep(xmax, 8), niceStep(ymax*1.05, 6)
	xmax = math.Ceil(xmax/xstep) * xstep
	ymax = math.Ceil(ymax*1.05/ystep) * ystep
	x := func(v float64) float64 { return float64(left) + v/xmax*pw }
	y := func(v float64) float64 { return float64(top) + ph - v/ymax*ph }

	b := bufio.NewWriter(w)
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", W, H, W, H)
	fmt.Fprintf(b, `<rect width="%d" height="%d" fill="white"/>`+"\n", W, H)
	fmt.Fprintf(b, `<text x="%d" y="28" font-size="16" font-weight="bold">%s</text>`+"\n", left, html.EscapeString(title))
	// Grid and ticks.
	for v := 0.0; v <= ymax+ystep/2; v += ystep {
		fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#e0e0e0"/>`+"\n", left, y(v), float64(left)+pw, y(v))
		fmt.Fprintf(b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", left-6, y(v)+4, fmtTick(v))
	}
	for v := 0.0; v <= xmax+xstep/2; v += xstep {
		fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%.1f" stroke="#f0f0f0"/>`+"\n", x(v), top, x(v), float64(top)+ph)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", x(v), float64(top)+ph+18, fmtTick(v))
	}
	// Axes and labels.
	fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/>`+"\n", left, float64(top)+ph, float64(left)+pw, float64(top)+ph)
	fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%.1f" stroke="black"/>`+"\n", left, top, left, float64(top)+ph)
	fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="middle">seconds since the crawler started</text>`+"\n", float64(left)+pw/2, H-15)
	fmt.Fprintf(b, `<text transform="translate(22 %.1f) rotate(-90)" text-anchor="middle">pages/s</text>`+"\n", float64(top)+ph/2)
	// Reference lines.
	ly := top + 10
	for i, l := range lines {
		c := lineColors[i%len(lineColors)]
		fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2" stroke-dasharray="8 5"/>`+"\n", left, y(l.value), float64(left)+pw, y(l.value), c)
		fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2" stroke-dasharray="8 5"/>`+"\n", W-right+15, ly, W-right+40, ly, c)
		fmt.Fprintf(b, `<text x="%d" y="%d">%s %s/s</text>`+"\n", W-right+46, ly+4, html.EscapeString(l.name), fmtTick(l.value))
		ly += 20
	}
	// Series.
	for i, s := range series {
		c := plotColors[i%len(plotColors)]
		Polyline(b, c, 2, s.pts, x, y)
		avg := 0.0
		for _, p := range s.pts {
			avg += p[1]
		}
		if len(s.pts) > 0 {
			avg /= float64(len(s.pts))
		}
		fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="3"/>`+"\n", W-right+15, ly, W-right+40, ly, c)
		fmt.Fprintf(b, `<text x="%d" y="%d">%s (mean %s/s)</text>`+"\n", W-right+46, ly+4, html.EscapeString(s.name), fmtTick(avg))
		ly += 20
	}
	b.WriteString("</svg>\n")
	if err := b.Flush(); err != nil {
		return fmt.Errorf("benchcrawl: plot: %w", err)
	}
	return nil
}

// Polyline draws the points pts (scaled by x and y) as an SVG polyline of
// the given colour and width; nothing for no points.
func Polyline(w io.Writer, color string, width float64, pts [][2]float64, x, y func(float64) float64) {
	if len(pts) == 0 {
		return
	}
	fmt.Fprintf(w, `<polyline fill="none" stroke="%s" stroke-width="%g" points="`, color, width)
	for j, p := range pts {
		if j > 0 {
			io.WriteString(w, " ")
		}
		fmt.Fprintf(w, "%.1f,%.1f", x(p[0]), y(p[1]))
	}
	io.WriteString(w, "\"/>\n")
}

// fmtTick formats an axis value compactly.
func fmtTick(v float64) string {
	switch {
	case v >= 10000:
		return fmt.Sprintf("%.0fk", v/1000)
	case v == math.Trunc(v):
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.2g", v)
}

// reportPlot builds the plot's series and lines from a report.
func reportPlot(rep *Report) (string, []plotSeries, []hLine) {
	var ss []plotSeries
	for _, r := range rep.Runs {
		if r.Skipped != "" {
			continue
		}
		ss = append(ss, plotSeries{name: r.Crawler, pts: rates(r.Series)})
	}
	var ls []hLine
	if rep.Limit != nil {
		ls = append(ls, hLine{name: "web limit (wrk)", value: rep.Limit.PagesPerSec})
	}
	if rep.AllowedRate > 0 && !math.IsInf(rep.AllowedRate, 0) {
		ls = append(ls, hLine{name: "allowed by delays", value: rep.AllowedRate})
	}
	title := fmt.Sprintf("Petrel crawl benchmark (%s): %d hosts on %d addresses, delays %s/%s",
		rep.Mode, rep.Web.Hosts, rep.Web.Addresses, rep.HostDelay, rep.IPDelay)
	return title, ss, ls
}

// writePlotFile writes the report's plot to path.
func writePlotFile(path string, rep *Report) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("benchcrawl: plot: %w", err)
	}
	title, ss, ls := reportPlot(rep)
	if err := writePlot(f, title, ss, ls); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("benchcrawl: plot: %w", err)
	}
	return nil
}
