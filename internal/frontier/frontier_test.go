package frontier

import (
	"fmt"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/petrel-crawler/petrel/internal/diskq"
)

func addrs(n, perIP int) mapResolver {
	m := mapResolver{}
	for i := 0; i < n; i++ {
		m[hostName(i)] = netip.AddrFrom4([4]byte{10, 0, byte(i / perIP / 256), byte(i/perIP%256 + 1)})
	}
	return m
}

// TestExactlyOnceAndPolite crawls a fake web through the real scheduler:
// every URL enqueued (with many duplicates) is fetched once, robots.txt
// first on every key, and the host and IP gaps hold.
func TestExactlyOnceAndPolite(t *testing.T) {
	const hosts, perHost = 12, 15
	h := newHarness(t, Config{Settings: Settings{HostDelay: 3 * time.Millisecond, IPDelay: time.Millisecond}, Resolver: addrs(hosts, 3)})
	for round := 0; round < 2; round++ {
		for p := 0; p < perHost; p++ {
			for i := 0; i < hosts; i++ {
				h.enqueue(fmt.Sprintf("http://%s/p/%d", hostName(i), p))
			}
		}
	}
	if err := h.run(16, nil); err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, u := range h.pages() {
		seen[u]++
	}
	if len(seen) != hosts*perHost {
		t.Errorf("%d distinct URLs fetched, want %d", len(seen), hosts*perHost)
	}
	for u, n := range seen {
		if n != 1 {
			t.Errorf("%s fetched %d times", u, n)
		}
	}
	first := map[string]bool{}
	for _, r := range h.log {
		if _, ok := first[r.key]; !ok {
			first[r.key] = r.robots
		}
	}
	for k, robots := range first {
		if !robots {
			t.Errorf("%s: first request was not robots.txt", k)
		}
	}
	h.checkGaps(func(r fetchRecord) string { return r.key }, 3*time.Millisecond)
	h.checkGaps(func(r fetchRecord) string { return r.addr.String() }, time.Millisecond)
}

// TestVirtualizerRoundTrip checks the FIFO order of one key's URLs, through
// the virtualizer under a tiny workbench budget (BUbiNG's WorkbenchVirtualizer
// round trip): nothing lost, order kept.
func TestVirtualizerRoundTrip(t *testing.T) {
	const hosts, perHost = 4, 3000
	dir := t.TempDir()
	q, err := diskq.OpenQueues(dir, diskq.Options{SegmentBytes: 1 << 16})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	virt := &countingVirt{Queues: q}
	h := newHarness(t, Config{Settings: Settings{WorkbenchBytes: 2048}, Resolver: addrs(hosts, 1), Virtualizer: virt})
	for p := 0; p < perHost; p++ {
		for i := 0; i < hosts; i++ {
			h.enqueue(fmt.Sprintf("http://%s/page/%06d", hostName(i), p))
		}
	}
	if err := h.run(4, nil); err != nil {
		t.Fatal(err)
	}
	if n := virt.enqueued.Load(); n < hosts*perHost/2 {
		t.Errorf("only %d URLs went through the virtualizer; the budget did not force virtualization", n)
	}
	if q.Total() != 0 {
		t.Errorf("%d records left in the virtualizer", q.Total())
	}
	last := map[string]string{}
	n := 0
	for _, u := range h.pages() {
		i := strings.Index(u, "/page/")
		host, p := u[:i], u[i:]
		if p <= last[host] {
			t.Fatalf("%s fetched after %s: order within the key broken", u, last[host])
		}
		last[host] = p
		n++
	}
	if n != hosts*perHost {
		t.Fatalf("%d URLs fetched, want %d", n, hosts*perHost)
	}
}

// countingVirt counts what goes through the virtualizer.
type countingVirt struct {
	*diskq.Queues
	enqueued atomic.Int64
}

func (c *countingVirt) Enqueue(id uint64, rec []byte) error {
	c.enqueued.Add(1)
	return c.Queues.Enqueue(id, rec)
}
