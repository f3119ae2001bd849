package frontier

import (
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"runtime"
	"testing"

	"github.com/petrel-crawler/petrel/internal/diskq"
	"github.com/petrel-crawler/petrel/internal/stats"
)

// BenchmarkHostBytes reports the heap the frontier holds per host met (the
// hosts of a large crawl outnumber what RAM holds of anything else): its
// visit state with one URL queued in RAM, its host resolved to one of 4096
// addresses (their workbench entries), and its per-key count.
func BenchmarkHostBytes(b *testing.B) {
	const hosts = 200_000
	for i := 0; i < b.N; i++ {
		ready, err := diskq.Open(b.TempDir(), diskq.Options{})
		if err != nil {
			b.Fatal(err)
		}
		f, err := New(Config{Ready: ready, Stats: new(stats.Crawl), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			b.Fatal(err)
		}
		s := f.sched
		var m0, m1 runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m0)
		var rec []byte
		var n int
		for h := 0; h < hosts; h++ {
			url := fmt.Sprintf("http://www.host%07d.test/section/%d/page-%d.html", h, h%97, h)
			rec = append(Meta{}.Append(rec[:0]), url...)
			f.counts.add(schemeAuthorityOf([]byte(url)))
			s.place(rec, true)
			if h%256 == 255 || h == hosts-1 {
				for _, hs := range s.dns.backlog {
					s.dns.inFlight++
					s.resolved(dnsResult{host: hs, addr: netip.AddrFrom4([4]byte{127, 150, byte(n >> 8 & 15), byte(n)})})
					n++
				}
				clear(s.dns.backlog)
				s.dns.backlog = s.dns.backlog[:0]
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&m1)
		if len(s.states) != hosts || len(s.wb.byAddr) != 4096 {
			b.Fatalf("%d visit states, %d entries", len(s.states), len(s.wb.byAddr))
		}
		b.ReportMetric(float64(m1.HeapAlloc-m0.HeapAlloc)/hosts, "B/host")
		runtime.KeepAlive(f)
		ready.Close()
	}
}
