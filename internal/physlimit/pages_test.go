package physlimit

import (
	"bytes"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/gzip"

	"github.com/petrel-crawler/petrel/internal/testweb"
)

// samplePages is the number of real-shape pages in the sample: enough that
// the per-KiB costs do not depend on which pages were drawn.
const samplePages = 256

// page is one page of the sample: its HTML and its two encodings.
type page struct {
	html, gz, br []byte
}

// sample is the sample's pages and its totals.
type sample struct {
	pages                  []page
	html, gzBytes, brBytes int
}

var (
	sampleOnce sync.Once
	theSample  sample
	sampleErr  error
)

// pages returns the sample of real-shape pages, made once: the web of a
// `petrel bench crawl --shape real` (2,000 hosts, 50 pages per host), pages
// drawn uniformly over hosts and then over the host's pages.
func pages(tb testing.TB) *sample {
	tb.Helper()
	sampleOnce.Do(func() { theSample, sampleErr = makeSample() })
	if sampleErr != nil {
		tb.Fatal(sampleErr)
	}
	return &theSample
}

func makeSample() (sample, error) {
	g, err := testweb.NewGen(testweb.GenConfig{Hosts: 2000, PagesPerHost: 50, Shape: testweb.ShapeReal, Port: 80, TLSPort: 443})
	if err != nil {
		return sample{}, err
	}
	r := rand.New(rand.NewPCG(1, 2))
	var s sample
	var b bytes.Buffer
	for range samplePages {
		h := r.IntN(2000)
		b.Reset()
		g.Render(&b, h, r.IntN(g.Pages(h)))
		html := bytes.Clone(b.Bytes())
		gz, err := gzipBytes(html, gzip.BestSpeed)
		if err != nil {
			return sample{}, err
		}
		br := brotliBytes(html)
		s.pages = append(s.pages, page{html: html, gz: gz, br: br})
		s.html += len(html)
		s.gzBytes += len(gz)
		s.brBytes += len(br)
	}
	return s, nil
}

func gzipBytes(p []byte, level int) ([]byte, error) {
	var b bytes.Buffer
	zw, err := gzip.NewWriterLevel(&b, level)
	if err != nil {
		return nil, err
	}
	zw.Write(p)
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func brotliBytes(p []byte) []byte {
	var b bytes.Buffer
	bw := brotli.NewWriterLevel(&b, 1)
	bw.Write(p)
	bw.Close()
	return b.Bytes()
}

// threadCPU returns the CPU time the calling OS thread has used.
func threadCPU(tb testing.TB) time.Duration {
	const clockThreadCPUTimeID = 3
	var ts syscall.Timespec
	if _, _, e := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTimeID, uintptr(unsafe.Pointer(&ts)), 0); e != 0 {
		tb.Fatalf("clock_gettime(CLOCK_THREAD_CPUTIME_ID): %v", e)
	}
	return time.Duration(ts.Nano())
}

// cpuMeter measures the CPU time of the benchmark's goroutine, locked to
// its OS thread from start to stop.
type cpuMeter struct {
	b  *testing.B
	t0 time.Duration
}

func startCPU(b *testing.B) *cpuMeter {
	runtime.LockOSThread()
	return &cpuMeter{b: b, t0: threadCPU(b)}
}

// stop reports cpu-ns/op and, when bytes > 0, cpu-ns/KB over bytes
// consumed in all; it returns the CPU time used.
func (m *cpuMeter) stop(bytes int64) time.Duration {
	d := threadCPU(m.b) - m.t0
	runtime.UnlockOSThread()
	m.b.ReportMetric(float64(d.Nanoseconds())/float64(m.b.N), "cpu-ns/op")
	if bytes > 0 {
		m.b.ReportMetric(float64(d.Nanoseconds())/(float64(bytes)/1024), "cpu-ns/KB")
	}
	return d
}

// TestSample checks that the sample is the real shape's: pages of tens of
// KiB at the median, a mean well above it, and compressed to a fraction.
func TestSample(t *testing.T) {
	if raceEnabled {
		t.Skip("the sample is the same without the race detector, and built ten times faster: go test ./internal/physlimit/")
	}
	s := pages(t)
	sizes := make([]int, len(s.pages))
	for i, p := range s.pages {
		sizes[i] = len(p.html)
	}
	slices.Sort(sizes)
	median, mean := sizes[len(sizes)/2], s.html/len(s.pages)
	t.Logf("%d pages: median %d B, mean %d B; gzip-1 %.3f, brotli-1 %.3f of the HTML",
		len(s.pages), median, mean, float64(s.gzBytes)/float64(s.html), float64(s.brBytes)/float64(s.html))
	if median < 15<<10 || median > 60<<10 || mean < 2*median {
		t.Errorf("median %d B, mean %d B: not the real shape's law (median 30 KiB, mean ≈ 3.6 × median)", median, mean)
	}
	if s.gzBytes >= s.html/2 || s.brBytes >= s.html/2 {
		t.Errorf("gzip %d B, brotli %d B of %d B of HTML: the pages do not compress as text does", s.gzBytes, s.brBytes, s.html)
	}
	if d := threadCPU(t); d <= 0 {
		t.Errorf("thread CPU clock reads %v", d)
	}
}
