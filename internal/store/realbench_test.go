package store

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/gzip"

	"github.com/petrel-crawler/petrel/internal/testweb"
)

// realPages is the number of real-shape pages the benchmarks write in turn.
const realPages = 128

var (
	realOnce sync.Once
	realResp [][]byte // responses as transferred: HTTP header, compressed body
	realErr  error
)

// realResponses returns responses of the real shape as a crawler receives
// them: pages of `petrel testweb --shape real` (2,000 hosts, 50 pages per
// host, drawn as internal/physlimit draws them), three in five gzip level 1
// and two in five brotli quality 1, as the web serves them.
func realResponses(tb testing.TB) [][]byte {
	tb.Helper()
	realOnce.Do(func() {
		g, err := testweb.NewGen(testweb.GenConfig{Hosts: 2000, PagesPerHost: 50, Shape: testweb.ShapeReal, Port: 80, TLSPort: 443})
		if err != nil {
			realErr = err
			return
		}
		r := rand.New(rand.NewPCG(1, 2))
		var html, body bytes.Buffer
		for i := range realPages {
			h := r.IntN(2000)
			html.Reset()
			g.Render(&html, h, r.IntN(g.Pages(h)))
			body.Reset()
			enc := "gzip"
			if i%5 < 3 {
				zw, _ := gzip.NewWriterLevel(&body, gzip.BestSpeed)
				zw.Write(html.Bytes())
				zw.Close()
			} else {
				enc = "br"
				bw := brotli.NewWriterLevel(&body, 1)
				bw.Write(html.Bytes())
				bw.Close()
			}
			head := "HTTP/1.1 200 OK\r\nContent-Encoding: " + enc + "\r\nContent-Length: " + strconv.Itoa(body.Len()) +
				"\r\nContent-Type: text/html; charset=utf-8\r\nDate: Mon, 07 Dec 2026 06:46:48 GMT\r\nVary: Accept-Encoding\r\n\r\n"
			realResp = append(realResp, append([]byte(head), body.Bytes()...))
		}
	})
	if realErr != nil {
		tb.Fatal(realErr)
	}
	return realResp
}

// processCPU returns the CPU time (user and system) of the process.
func processCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkWriteReal writes exchanges of the real shape's compressed pages
// (one per op, from one goroutine, one compressor, gzip level 1 as the
// crawler's default) and reports the process's CPU per exchange and per
// KiB of response, and the WARC bytes per exchange. Each response's last 8
// bytes are made unique, so that no payload is a revisit.
func BenchmarkWriteReal(b *testing.B) {
	resps := realResponses(b)
	opts := testOptions(b)
	opts.Compressors = 1
	opts.GzipLevel = gzip.BestSpeed
	w, err := Open(opts)
	if err != nil {
		b.Fatal(err)
	}
	req := request("/articles/rofuze/2")
	buf := make([]byte, 0, 1<<20)
	var n, respBytes int64
	cpu0 := processCPU(b)
	for b.Loop() {
		resp := append(buf[:0], resps[n%realPages]...)
		binary.LittleEndian.PutUint64(resp[len(resp)-8:], uint64(n))
		n++
		respBytes += int64(len(resp))
		if _, err := w.Write(&Exchange{TargetURI: "https://www.example.test/" + strconv.FormatInt(n, 10), IP: "127.0.0.1",
			Request: req, Response: resp}); err != nil {
			b.Fatal(err)
		}
	}
	cpu := processCPU(b) - cpu0
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	st := w.Stats()
	if st.Revisits != 0 {
		b.Fatalf("%d revisits", st.Revisits)
	}
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(n)/1e3, "cpu-µs/op")
	b.ReportMetric(float64(cpu.Nanoseconds())/(float64(respBytes)/1024), "cpu-ns/KB")
	b.ReportMetric(float64(st.CompressedBytes)/float64(n), "warc-B/op")
	b.ReportMetric(float64(respBytes)/float64(n), "resp-B/op")
}
