package frontier

import (
	"container/heap"
	"net/netip"
	"time"
)

// RobotsRules is what the frontier needs of a parsed robots.txt.
type RobotsRules interface {
	Allowed(pathQuery string) bool
	CrawlDelay() time.Duration
}

// visitState is the state of one politeness key (by default one
// scheme+authority): its queue of URLs, when it may be fetched next, how it
// failed. Owned by the scheduler goroutine.
//
// Invariants: a visit state is in its entry's heap iff it is attached to an
// entry, not broken, not waiting, has work and has room for one more request
// in flight. Queue records are meta+suffix, the URL being prefix+suffix.
type visitState struct {
	key    string     // politeness key
	prefix string     // bytes every URL of this key starts with (omitted from records)
	id     uint64     // identity in the virtualizer
	host   *hostState // the host whose address decides the workbench entry

	queue   pathQueue // the in-RAM part of the queue
	onDisk  int64     // records virtualized, to come after the RAM part
	retries []retry   // records to fetch again before the queue, in order

	entry   *ipEntry     // nil until the DNS stage has resolved host
	rs      *robotsState // robots.txt of the key's authority, when it has one (authority policy)
	waiting bool         // withdrawn until a host resolution or a robots.txt fetch ends
	broken  bool
	active  bool // counted in the front (has work or a request in flight)

	nextFetch int64         // monotonic ns: earliest start of the next request
	pages     int64         // page fetches dispatched (authority policy: the key's budget used)
	delay     time.Duration // the delay set by the last release, and why
	delayWhy  DelayReason
	inFlight  int
	failures  int // consecutive failed URLs (retries exhausted)

	heapIndex int // position in entry.states, -1 when not there
}

type retry struct {
	rec     string // meta+suffix
	attempt int
}

// hasWork reports whether the visit state has something to fetch.
func (v *visitState) hasWork() bool {
	return v.queue.len() > 0 || len(v.retries) > 0 || v.onDisk > 0
}

// queued is the number of URLs the visit state holds.
func (v *visitState) queued() int64 {
	return int64(v.queue.len()+len(v.retries)) + v.onDisk
}

// hostState is what the DNS stage knows of one host name.
type hostState struct {
	name      string
	addr      netip.Addr
	resolved  bool
	resolving bool
	dead      bool // did not resolve, or its address is refused: its URLs are dropped
	refused   bool
	fails     int
	retryAt   int64
	waiters   []*visitState // visit states waiting for this resolution
	parked    [][]byte      // ready records waiting for it (ip policy)
}

// robotsState is the robots.txt of one scheme+authority.
type robotsState struct {
	rules    RobotsRules // nil: not fetched, expired, or unavailable for now
	expires  int64
	inFlight bool
	fails    int
	dead     bool // unavailable after every retry: the authority's URLs are dropped
	waiters  []*visitState
}

// ipEntry is the workbench entry of one IP address: the visit states whose
// hosts resolved to it, ordered by next fetch time. Owned by the scheduler.
type ipEntry struct {
	addr      netip.Addr
	states    vsHeap
	nextFetch int64
	due       int64 // readyAt, cached for the workbench heap (set by workbench.fix)
	inFlight  int
	members   int // visit states attached (for the gauge and cleanup)
	heapIndex int // position in the workbench heap, -1 when not there
}

// readyAt is when the entry's best visit state may be fetched.
func (e *ipEntry) readyAt() int64 {
	t := e.nextFetch
	if len(e.states) > 0 && e.states[0].nextFetch > t {
		t = e.states[0].nextFetch
	}
	return t
}

// heapItem is what an indexedHeap holds: an element that knows its sort
// key and is told its position (-1 when it leaves), so that heap.Fix and
// heap.Remove can find it.
type heapItem interface {
	heapKey() int64
	setHeapIndex(int)
}

// indexedHeap is a container/heap of items ordered by heapKey, smallest
// first, each keeping its own index.
type indexedHeap[T heapItem] []T

func (h indexedHeap[T]) Len() int           { return len(h) }
func (h indexedHeap[T]) Less(i, j int) bool { return h[i].heapKey() < h[j].heapKey() }
func (h indexedHeap[T]) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].setHeapIndex(i)
	h[j].setHeapIndex(j)
}
func (h *indexedHeap[T]) Push(x any) {
	v := x.(T)
	v.setHeapIndex(len(*h))
	*h = append(*h, v)
}
func (h *indexedHeap[T]) Pop() any {
	old := *h
	v := old[len(old)-1]
	var zero T
	old[len(old)-1] = zero
	*h = old[:len(old)-1]
	v.setHeapIndex(-1)
	return v
}

// vsHeap orders visit states by next fetch time.
type vsHeap = indexedHeap[*visitState]

func (v *visitState) heapKey() int64     { return v.nextFetch }
func (v *visitState) setHeapIndex(i int) { v.heapIndex = i }

// entryHeap orders workbench entries by readyAt (cached in due).
type entryHeap = indexedHeap[*ipEntry]

func (e *ipEntry) heapKey() int64     { return e.due }
func (e *ipEntry) setHeapIndex(i int) { e.heapIndex = i }

// workbench holds the entries that have a fetchable visit state.
type workbench struct {
	entries entryHeap
	parKey  int
	parIP   int
}

// fix puts e where it belongs: in the heap when it has a visit state ready
// to go and room for one more request, out of it otherwise.
func (w *workbench) fix(e *ipEntry) {
	e.due = e.readyAt()
	eligible := len(e.states) > 0 && e.inFlight < w.parIP
	switch {
	case eligible && e.heapIndex < 0:
		heap.Push(&w.entries, e)
	case eligible:
		heap.Fix(&w.entries, e.heapIndex)
	case e.heapIndex >= 0:
		heap.Remove(&w.entries, e.heapIndex)
	}
}

// offer puts v in its entry's heap if it can be fetched (has work, has room
// for a request, is attached), and fixes the entry.
func (w *workbench) offer(v *visitState) {
	e := v.entry
	if e == nil {
		return
	}
	want := v.inFlight < w.parKey && v.hasWork() && !v.waiting && !v.broken
	switch {
	case want && v.heapIndex < 0:
		heap.Push(&e.states, v)
	case want:
		heap.Fix(&e.states, v.heapIndex)
	case v.heapIndex >= 0:
		heap.Remove(&e.states, v.heapIndex)
	}
	w.fix(e)
}

// withdraw takes v out of its entry's heap.
func (w *workbench) withdraw(v *visitState) {
	if v.entry != nil && v.heapIndex >= 0 {
		heap.Remove(&v.entry.states, v.heapIndex)
		w.fix(v.entry)
	}
}
