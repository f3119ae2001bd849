package benchscale

import (
	"bufio"
	"fmt"
	"html"
	"io"
	"math"
	"os"

	"github.com/petrel-crawler/petrel/internal/benchcrawl"
)

// line is one series of a panel: (seconds, value) points.
type line struct {
	name string
	pts  [][2]float64
}

// panel is one chart of the plot.
type panel struct {
	title string
	lines []line
}

var colors = []string{"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2"}

// series extracts one value per sample.
func series(ss []Sample, name string, f func(Sample) float64) line {
	l := line{name: name}
	for _, s := range ss {
		l.pts = append(l.pts, [2]float64{s.T, f(s)})
	}
	return l
}

// panels are the four charts of a report.
func panels(r *Report) []panel {
	ss := r.Samples
	return []panel{
		{"pages/s", []line{series(ss, "pages/s", func(s Sample) float64 { return s.PagesPerS })}},
		{"URLs (millions)", []line{
			series(ss, "known", func(s Sample) float64 { return float64(s.Known) / 1e6 }),
			series(ss, "queued on disk", func(s Sample) float64 { return float64(s.QueuedDisk) / 1e6 }),
			series(ss, "queued in RAM", func(s Sample) float64 { return float64(s.QueuedRAM) / 1e6 }),
		}},
		{"memory (MiB)", []line{
			series(ss, "RSS", func(s Sample) float64 { return mib(s.RSS) }),
			series(ss, "Go heap", func(s Sample) float64 { return mib(s.Heap) }),
		}},
		{"disk (MiB)", []line{
			series(ss, "sieve store", func(s Sample) float64 { return mib(s.DiskBy.SieveStore) }),
			series(ss, "sieve buffers", func(s Sample) float64 { return mib(s.DiskBy.SieveBuffers) }),
			series(ss, "ready queue", func(s Sample) float64 { return mib(s.DiskBy.Ready) }),
			series(ss, "virtualizer", func(s Sample) float64 { return mib(s.DiskBy.Virtualizer) }),
			series(ss, "checkpoints", func(s Sample) float64 { return mib(s.DiskBy.Checkpoints) }),
			series(ss, "WARC / 10", func(s Sample) float64 { return mib(s.DiskBy.WARC) / 10 }),
		}},
	}
}

// writePlot draws the panels one above the other, sharing the time axis.
func writePlot(w io.Writer, title string, ps []panel) error {
	const (
		W, PH                    = 960, 230
		left, right, top, bottom = 80, 200, 50, 50
		gap                      = 40
	)
	H := top + len(ps)*PH + (len(ps)-1)*gap + bottom
	pw, ph := float64(W-left-right), float64(PH)
	xmax := 1.0
	for _, p := range ps {
		for _, l := range p.lines {
			for _, pt := range l.pts {
				xmax = math.Max(xmax, pt[0])
			}
		}
	}
	xstep := benchcrawl.NiceStep(xmax, 10)
	xmax = math.Ceil(xmax/xstep) * xstep
	x := func(v float64) float64 { return float64(left) + v/xmax*pw }
	b := bufio.NewWriter(w)
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", W, H, W, H)
	fmt.Fprintf(b, `<rect width="%d" height="%d" fill="white"/>`+"\n", W, H)
	fmt.Fprintf(b, `<text x="%d" y="28" font-size="15" font-weight="bold">%s</text>`+"\n", left, html.EscapeString(title))
	for i, p := range ps {
		top := float64(top + i*(PH+gap))
		ymax := 1e-9
		for _, l := range p.lines {
			for _, pt := range l.pts {
				ymax = math.Max(ymax, pt[1])
			}
		}
		ystep := benchcrawl.NiceStep(ymax*1.05, 4)
		ymax = math.Ceil(ymax*1.05/ystep) * ystep
		y := func(v float64) float64 { return top + ph - v/ymax*ph }
		for v := 0.0; v <= ymax+ystep/2; v += ystep {
			fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#e0e0e0"/>`+"\n", left, y(v), float64(left)+pw, y(v))
			fmt.Fprintf(b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", left-6, y(v)+4, benchcrawl.FmtTick(v))
		}
		for v := 0.0; v <= xmax+xstep/2; v += xstep {
			fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", x(v), top+ph+16, benchcrawl.FmtTick(v))
		}
		fmt.Fprintf(b, `<rect x="%d" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="black"/>`+"\n", left, top, pw, ph)
		fmt.Fprintf(b, `<text x="%d" y="%.1f" font-weight="bold">%s</text>`+"\n", left, top-6, html.EscapeString(p.title))
		for j, l := range p.lines {
			c := colors[j%len(colors)]
			benchcrawl.Polyline(b, c, 1.5, l.pts, x, y)
			ly := top + 12 + float64(j)*18
			fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="%s" stroke-width="3"/>`+"\n", W-right+12, ly, W-right+36, ly, c)
			fmt.Fprintf(b, `<text x="%d" y="%.1f">%s</text>`+"\n", W-right+42, ly+4, html.EscapeString(l.name))
		}
	}
	fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="middle">seconds since the crawl started</text>`+"\n", float64(left)+pw/2, H-12)
	b.WriteString("</svg>\n")
	if err := b.Flush(); err != nil {
		return fmt.Errorf("benchscale: plot: %w", err)
	}
	return nil
}

// writePlotFile writes the report's plot to path.
func writePlotFile(path string, r *Report) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("benchscale: plot: %w", err)
	}
	title := fmt.Sprintf("Petrel at scale: %d hosts × ~%d pages, until %d URLs known (delays %s/%s)",
		r.Web.Hosts, r.Web.PagesPerHost, r.N, r.HostDelay, r.IPDelay)
	if err := writePlot(f, title, panels(r)); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("benchscale: plot: %w", err)
	}
	return nil
}
