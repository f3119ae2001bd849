//go:build unix

package dataset

import (
	"bytes"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/petrel-crawler/petrel/internal/store"
	"github.com/petrel-crawler/petrel/internal/testweb"
)

// benchPages is the number of pages of the benchmark's WARC file.
const benchPages = 400

// headlineWARC writes a WARC file of benchPages pages of the headline
// shape (the generated web of `petrel bench crawl`: 2,000 hosts on 500
// addresses, 20 KiB pages, 40 links per page), as a short crawl stores
// them, and returns its path.
func headlineWARC(b *testing.B) string {
	return generatedWARC(b, testweb.GenConfig{Hosts: 2000, Addrs: 500, PageBytes: 20 << 10, LinksPerPage: 40, Seed: 1, Port: 80})
}

// realWARC writes a WARC file of benchPages pages of the real shape
// (`petrel bench crawl --shape real`) and returns its path.
func realWARC(b *testing.B) string {
	return generatedWARC(b, testweb.GenConfig{Hosts: 2000, Seed: 1, Port: 80, Shape: testweb.ShapeReal})
}

// generatedWARC writes a WARC file of benchPages pages of the generated
// web of c and returns its path.
func generatedWARC(b *testing.B, c testweb.GenConfig) string {
	b.Helper()
	g, err := testweb.NewGen(c)
	if err != nil {
		b.Fatal(err)
	}
	exs := make([]store.Exchange, 0, benchPages)
	var page bytes.Buffer
	for i := range benchPages {
		h, p := i%2000, i/2000
		page.Reset()
		g.Render(&page, h, p)
		exs = append(exs, store.Exchange{TargetURI: g.URL(h, p), Response: htmlResponse("200 OK", "", page.String())})
	}
	return writeExchanges(b, b.TempDir(), exs)
}

// BenchmarkConvert converts a WARC file of headline-shape pages: the
// outputs of a crawl with --wat --wet --cc-index, and each alone. It
// reports the process's CPU per page (user + system, the garbage
// collector's included), which a loaded machine inflates less than the
// time per page.
func BenchmarkConvert(b *testing.B) { benchmarkConvert(b, headlineWARC(b)) }

// BenchmarkConvertReal is BenchmarkConvert on pages of the real shape.
func BenchmarkConvertReal(b *testing.B) { benchmarkConvert(b, realWARC(b)) }

// benchmarkConvert converts warc with the outputs of a crawl with --wat
// --wet --cc-index, and each alone, reporting the CPU per page.
func benchmarkConvert(b *testing.B, warc string) {
	for _, c := range []struct {
		name string
		o    Options
	}{
		{"wat+wet+rows", Options{WAT: true, WET: true, Rows: true}},
		{"wet", Options{WET: true}},
		{"wet-text-all", Options{WET: true, Text: TextAll}},
		{"rows", Options{Rows: true}},
		{"wat", Options{WAT: true}},
	} {
		b.Run(c.name, func(b *testing.B) {
			cpu := processCPU(b)
			for b.Loop() {
				if _, err := Convert(warc, c.o); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64((processCPU(b)-cpu).Microseconds())/float64(b.N*benchPages), "cpu-µs/page")
		})
	}
	if fi, err := os.Stat(warc); err == nil {
		b.Logf("WARC file %d bytes, %d pages", fi.Size(), benchPages)
	}
}

// processCPU is the CPU time the process has used, user and system.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
