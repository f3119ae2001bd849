package frontier

import (
	"container/heap"
	"net/netip"
)

// The workbench (BUbiNG's) holds one entry per IP address, each with the
// visit states whose hosts resolved to it, and orders the entries by when
// their best visit state may be fetched. Owned by the scheduler goroutine.
//
// Invariants:
//   - an entry is in the workbench heap iff it has a fetchable visit state
//     (see visitState) and fewer than parIP requests in flight; its due
//     time is readyAt, cached by fix;
//   - within an entry, visit states are ordered by nextFetch;
//   - every change of an entry's states, next fetch time or requests in
//     flight is followed by fix, and every change of a visit state's by
//     offer (which fixes its entry).
type workbench struct {
	entries entryHeap
	byAddr  map[netip.Addr]*ipEntry
	all     []*ipEntry // every entry, by idx (an entry is never forgotten)
	parKey  int
	parIP   int
}

// ipEntry is the workbench entry of one IP address.
type ipEntry struct {
	addr      netip.Addr
	states    vsHeap
	nextFetch int64
	due       int64 // readyAt, cached for the workbench heap (set by workbench.fix)
	inFlight  int
	members   int    // visit states attached (for the gauge and cleanup)
	held      bool   // no request until released (handoff.go); nextFetch is heldTime
	heldNext  int64  // while held: the nextFetch it would have
	heapIndex int    // position in the workbench heap, -1 when not there
	idx       uint32 // position in workbench.all

	readdressed bool // a host has moved from this address (readdress.go)
}

// readyAt is when the entry's best visit state may be fetched.
func (e *ipEntry) readyAt() int64 {
	t := e.nextFetch
	if len(e.states) > 0 && e.states[0].nextFetch > t {
		t = e.states[0].nextFetch
	}
	return t
}

// entryFor returns the workbench entry of an address, creating it.
func (w *workbench) entryFor(a netip.Addr) *ipEntry {
	e := w.byAddr[a]
	if e == nil {
		e = &ipEntry{addr: a, heapIndex: -1, idx: uint32(len(w.all))}
		w.byAddr[a] = e
		w.all = append(w.all, e)
	}
	return e
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
// for a request, is attached and ready), and fixes the entry.
func (w *workbench) offer(v *visitState) {
	e := v.entry
	if e == nil {
		return
	}
	want := int(v.inFlight) < w.parKey && v.hasWork() && v.phase == phaseReady
	switch {
	case want && v.heapIndex < 0:
		heap.Push(&e.states, v)
	case want:
		heap.Fix(&e.states, int(v.heapIndex))
	case v.heapIndex >= 0:
		heap.Remove(&e.states, int(v.heapIndex))
	}
	w.fix(e)
}

// withdraw takes v out of its entry's heap.
func (w *workbench) withdraw(v *visitState) {
	if v.entry != nil && v.heapIndex >= 0 {
		heap.Remove(&v.entry.states, int(v.heapIndex))
		w.fix(v.entry)
	}
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
func (v *visitState) setHeapIndex(i int) { v.heapIndex = int32(i) }

// entryHeap orders workbench entries by readyAt (cached in due).
type entryHeap = indexedHeap[*ipEntry]

func (e *ipEntry) heapKey() int64     { return e.due }
func (e *ipEntry) setHeapIndex(i int) { e.heapIndex = i }
