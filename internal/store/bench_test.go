package store

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/klauspost/compress/gzip"
)

// htmlPage returns a deterministic HTML page of about size bytes whose text
// compresses like real pages do (a vocabulary of words, markup, links).
func htmlPage(size int, seed uint64) []byte {
	words := strings.Fields("the crawler fetches pages from many hosts while keeping politeness per host and per address " +
		"archive record response request digest payload header body link anchor table section article news weather sport " +
		"index about contact privacy terms search login register home products services blog events")
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	var b strings.Builder
	b.WriteString("<!DOCTYPE html><html><head><title>Page ")
	b.WriteString(strconv.FormatUint(seed, 10))
	b.WriteString("</title></head><body>\n")
	for b.Len() < size-30 {
		switch rng.IntN(4) {
		case 0:
			fmt.Fprintf(&b, "<a href=\"/%s/%d.html\">%s</a>\n", words[rng.IntN(len(words))], rng.IntN(100000), words[rng.IntN(len(words))])
		default:
			b.WriteString("<p>")
			for range 8 + rng.IntN(12) {
				b.WriteString(words[rng.IntN(len(words))])
				b.WriteByte(' ')
			}
			b.WriteString("</p>\n")
		}
	}
	b.WriteString("</body></html>\n")
	return []byte(b.String())
}

// BenchmarkWrite measures records/s and MB/s (of uncompressed exchanges)
// for 20 KiB HTML responses, with 1 and GOMAXPROCS compressors and several
// gzip levels. Writes come from 4*GOMAXPROCS goroutines, as parsers would
// call Write.
func BenchmarkWrite(b *testing.B) {
	const pages = 64
	bodies := make([][]byte, pages)
	for i := range bodies {
		bodies[i] = htmlPage(20<<10, uint64(i))
	}
	levels := []struct {
		name  string
		level int
	}{
		{"speed", gzip.BestSpeed},
		{"l3", 3},
		{"default", gzip.DefaultCompression},
		{"best", gzip.BestCompression},
	}
	for _, comp := range []int{1, runtime.GOMAXPROCS(0)} {
		for _, lv := range levels {
			b.Run(fmt.Sprintf("compressors=%d/level=%s", comp, lv.name), func(b *testing.B) {
				opts := testOptions(b)
				opts.Compressors = comp
				opts.GzipLevel = lv.level
				w, err := Open(opts)
				if err != nil {
					b.Fatal(err)
				}
				var seq atomic.Int64
				size := len(request("/x")) + len(response("200 OK", "Content-Type: text/html\r\n", string(bodies[0])))
				b.SetBytes(int64(size))
				b.SetParallelism(4)
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						n := seq.Add(1)
						body := bodies[n%pages]
						// A unique first line keeps every payload distinct (no revisits).
						resp := make([]byte, 0, len(body)+64)
						resp = append(resp, "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n<!-- "...)
						resp = strconv.AppendInt(resp, n, 10)
						resp = append(resp, " -->"...)
						resp = append(resp, body...)
						if _, err := w.Write(&Exchange{TargetURI: "http://example.test/" + strconv.FormatInt(n, 10), IP: "127.0.0.1",
							Request: request("/x"), Response: resp}); err != nil {
							b.Error(err)
							return
						}
					}
				})
				if err := w.Close(); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				st := w.Stats()
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "exchanges/s")
				b.ReportMetric(float64(st.UncompressedBytes)/float64(st.CompressedBytes), "ratio")
			})
		}
	}
}
