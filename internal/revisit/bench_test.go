package revisit

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/petrel-crawler/petrel/internal/frontier"
)

// BenchmarkScheduleVisited schedules b.N new URLs of about 60 bytes from
// parallel goroutines (as parsers do) and reports the file's bytes per URL
// and the Go heap in use after.
func BenchmarkScheduleVisited(b *testing.B) {
	dir := b.TempDir()
	s, err := Open(Config{Dir: dir, Settings: Settings{Policy: PolicyChangeRate, Min: time.Hour, Max: 28 * 24 * time.Hour},
		Issue: func([]byte) error { return nil }})
	if err != nil {
		b.Fatal(err)
	}
	meta := frontier.Meta{Depth: 3}.Append(nil)
	var n atomic.Int64
	now := time.Now()
	b.SetParallelism(16)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := n.Add(1)
			u := "http://host-" + strconv.FormatInt(i%5000, 10) + ".example.test/section/page-" + strconv.FormatInt(i, 10) + ".html"
			if _, err := s.Visited(u, meta, Visit{Time: now, Status: 200, ETag: `"5f1e-60a8c1b2"`, LastModified: now, Full: true}); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, "schedule.db"))
	if err != nil {
		b.Fatal(err)
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(fi.Size())/float64(b.N), "file-B/URL")
	b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-MiB")
}
