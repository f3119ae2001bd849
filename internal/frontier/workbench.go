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
// scheme+authority): its queue of path+queries, its robots.txt, when it may
// be fetched next. Owned by the scheduler goroutine.
type visitState struct {
	key             string // politeness key
	schemeAuthority string // "http://host:port" (without trailing slash)
	host            string // name to resolve

	queue   pathQueue
	retries []retry // URLs to fetch again before the queue, in order

	entry     *ipEntry // nil until the DNS stage has resolved the host
	resolving bool
	dnsFails  int
	broken    bool

	nextFetch int64 // monotonic ns: earliest start of the next request
	inFlight  int

	robots         RobotsRules
	robotsExpires  int64 // monotonic ns; 0 = never fetched
	robotsInFlight bool
	robotsFails    int
	lastDuration   time.Duration
	failures       int // consecutive failed fetches (network errors)
	backoff        time.Duration

	heapIndex int // position in entry.states, -1 when not there
}

type retry struct {
	pathQuery string
	attempt   int
}

// hasWork reports whether the visit state has something to fetch.
func (v *visitState) hasWork() bool {
	return v.queue.len() > 0 || len(v.retries) > 0
}

// ipEntry is the workbench entry of one IP address: the visit states whose
// hosts resolved to it, ordered by next fetch time. Owned by the scheduler.
type ipEntry struct {
	addr      netip.Addr
	states    vsHeap
	nextFetch int64
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

// vsHeap orders visit states by next fetch time.
type vsHeap []*visitState

func (h vsHeap) Len() int           { return len(h) }
func (h vsHeap) Less(i, j int) bool { return h[i].nextFetch < h[j].nextFetch }
func (h vsHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].heapIndex = i
	h[j].heapIndex = j
}
func (h *vsHeap) Push(x any) {
	v := x.(*visitState)
	v.heapIndex = len(*h)
	*h = append(*h, v)
}
func (h *vsHeap) Pop() any {
	old := *h
	v := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	v.heapIndex = -1
	return v
}

// entryHeap orders workbench entries by readyAt.
type entryHeap []*ipEntry

func (h entryHeap) Len() int           { return len(h) }
func (h entryHeap) Less(i, j int) bool { return h[i].readyAt() < h[j].readyAt() }
func (h entryHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].heapIndex = i
	h[j].heapIndex = j
}
func (h *entryHeap) Push(x any) {
	e := x.(*ipEntry)
	e.heapIndex = len(*h)
	*h = append(*h, e)
}
func (h *entryHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	e.heapIndex = -1
	return e
}

// workbench holds the entries that have a fetchable visit state.
type workbench struct {
	entries entryHeap
	parKey  int
	parIP   int
}

// fix puts e where it belongs: in the heap when it has a visit state ready
// to go and room for one more request, out of it otherwise.
func (w *workbench) fix(e *ipEntry) {
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
	if e == nil || v.broken {
		return
	}
	want := v.inFlight < w.parKey && v.hasWork()
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
