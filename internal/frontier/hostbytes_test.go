package frontier

import (
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/netip"
	"runtime"
	"testing"
	"unsafe"

	"github.com/petrel-crawler/petrel/internal/diskq"
	"github.com/petrel-crawler/petrel/internal/stats"
)

// BenchmarkHostBytes reports the heap the frontier holds per host met (the
// hosts of a large crawl outnumber what RAM holds of anything else), in
// three forms side by side: B/host-queued, its visit state with one URL
// queued in RAM, its host resolved to one of 4096 addresses (their
// workbench entries), and its per-key count; B/host-idle-state, the same
// visit state once its URL is gone (no URL, nothing in flight) but kept
// whole; B/host, the idle key it settles into (idlekey.go), its host
// forgotten past the DNS stage's cache.
func BenchmarkHostBytes(b *testing.B) {
	const hosts = 200_000
	if unsafe.Sizeof(idleKey{}) != idleKeyBytes {
		b.Fatalf("an idle key is %d bytes, not %d", unsafe.Sizeof(idleKey{}), idleKeyBytes)
	}
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
		m0 := heapNow()
		placeHosts(b, s, hosts)
		if len(s.states) != hosts || len(s.wb.byAddr) != 4096 {
			b.Fatalf("%d visit states, %d entries", len(s.states), len(s.wb.byAddr))
		}
		queued := heapNow()
		for _, v := range s.states {
			if _, _, ok := s.pop(v); !ok {
				b.Fatal("no URL to pop")
			}
			s.wb.offer(v)
			s.deactivate(v)
		}
		idleState := heapNow()
		for _, v := range s.states {
			if !s.canIdle(v) {
				b.Fatalf("visit state %s cannot go idle", v.key)
			}
			s.makeIdle(v)
		}
		for s.dns.trim(0) > 0 {
		}
		// The maps do not shrink: a crawl's hold what is active at once.
		s.states = shrunk(s.states)
		s.dns.hosts = shrunk(s.dns.hosts)
		idle := heapNow()
		if len(s.idleKeys) != hosts || len(s.dns.hosts) > defaultHostCache {
			b.Fatalf("%d idle keys, %d hosts held", len(s.idleKeys), len(s.dns.hosts))
		}
		b.ReportMetric(float64(queued-m0)/hosts, "B/host-queued")
		b.ReportMetric(float64(idleState-m0)/hosts, "B/host-idle-state")
		b.ReportMetric(float64(idle-m0)/hosts, "B/host")
		runtime.KeepAlive(f)
		ready.Close()
	}
}

// placeHosts places one URL of each of n hosts and resolves them to 4096
// addresses.
func placeHosts(b *testing.B, s *scheduler, hosts int) {
	var rec []byte
	var n int
	for h := 0; h < hosts; h++ {
		url := fmt.Sprintf("http://www.host%07d.test/section/%d/page-%d.html", h, h%97, h)
		rec = append(Meta{}.Append(rec[:0]), url...)
		s.f.counts.add(schemeAuthorityOf([]byte(url)))
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
}

// shrunk is a map of m's entries sized for them (maps.Clone keeps the size).
func shrunk[K comparable, V any](m map[K]V) map[K]V {
	out := make(map[K]V, len(m))
	maps.Copy(out, m)
	return out
}

// heapNow is the heap in use after a collection.
func heapNow() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
