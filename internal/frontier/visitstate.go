package frontier

import "time"

// A visit state is the state of one politeness key (by default one
// scheme+authority): its queue of URLs, when it may be fetched next, how it
// failed. Owned by the scheduler goroutine. One that settles idle leaves
// RAM as an idle key (idlekey.go) until a record of its key arrives.
//
// Invariants:
//   - phase moves resolving → ready ⇄ robots, or resolving ⇄ ready when a
//     URL of a multi-host key waits for another host; broken is final.
//   - it is in its entry's heap iff its phase is ready, it is attached to an
//     entry, it has work, and it has room for one more request in flight
//     (workbench.offer keeps this).
//   - queue records are meta+suffix, the URL being prefix()+suffix; retries
//     come before the RAM queue, the RAM queue before the onDisk records.
//   - active (counted in the distributor's front) iff it has work, a
//     request in flight, or is waiting, and is not broken with nothing in
//     flight.
type visitState struct {
	key   string     // politeness key
	host  *hostState // the host whose address decides the workbench entry
	entry *ipEntry   // nil until the DNS stage has resolved host

	queue pathQueue  // the in-RAM part of the queue
	rare  *visitRare // what few visit states hold at a time (nil: none of it)

	id        uint64        // identity in the virtualizer
	onDisk    int64         // records virtualized, to come after the RAM part
	nextFetch int64         // the frontier's clock: earliest start of the next request
	pages     int64         // page fetches dispatched (authority policy: the key's budget used)
	delay     time.Duration // the delay set by the last release, and why

	gen       uint32 // hand-overs of the key this agent knows of (handover.go)
	inFlight  int32
	failures  int32 // consecutive failed URLs (retries exhausted)
	heapIndex int32 // position in entry.states, -1 when not there

	phase       phase
	active      bool
	keyIsPrefix bool // the URLs start with key (prefix returns it), else with nothing
	delayWhy    DelayReason
	dropWhy     DropReason // why it was purged (broken)
}

// prefix is the bytes every URL of the key starts with, omitted from its
// records: the key itself with the authority and url policies, nothing
// with the others (their keys are not URL prefixes).
func (v *visitState) prefix() string {
	if v.keyIsPrefix {
		return v.key
	}
	return ""
}

// phase is where a visit state is in its life.
type phase uint8

const (
	phaseResolving phase = iota // withdrawn until the DNS stage resolves a host of it
	phaseReady                  // attached to its workbench entry, fetchable when it has work
	phaseRobots                 // withdrawn until a robots.txt fetch of its authority ends
	phaseBroken                 // purged (BUbiNG's broken visit states): its URLs are dropped
)

// waiting reports whether v is withdrawn for a resolution or a robots.txt.
func (v *visitState) waiting() bool { return v.phase == phaseResolving || v.phase == phaseRobots }

// broken reports whether v was purged.
func (v *visitState) broken() bool { return v.phase == phaseBroken }

// setPhase moves v to p; a broken visit state stays broken.
func (v *visitState) setPhase(p phase) {
	if v.phase != phaseBroken {
		v.phase = p
	}
}

// visitRare is the part of a visit state that few hold at a time, kept
// apart so that the others do not pay for it; a visit state drops it when
// it is empty (setRetries, setMovedTo).
type visitRare struct {
	retries []retry // records to fetch again before the queue, in order
	movedTo Peer    // the agent that owns host's address, when not this one (handoff.go)
	down    *outage // the host has been unreachable since (hostdown.go)
}

// retries is the records v is to fetch again before its queue, in order.
func (v *visitState) retries() []retry {
	if v.rare == nil {
		return nil
	}
	return v.rare.retries
}

// movedTo is the agent that owns the address of v's host, when not this
// one (handoff.go), else "".
func (v *visitState) movedTo() Peer {
	if v.rare == nil {
		return ""
	}
	return v.rare.movedTo
}

// setRetries replaces v's retries (an empty list holds no array).
func (v *visitState) setRetries(r []retry) {
	if len(r) == 0 {
		r = nil
	}
	if v.rare == nil && r == nil {
		return
	}
	v.mustRare().retries = r
	v.tidyRare()
}

// setMovedTo sets the agent v's key moved to ("": this one).
func (v *visitState) setMovedTo(p Peer) {
	if v.rare == nil && p == "" {
		return
	}
	v.mustRare().movedTo = p
	v.tidyRare()
}

func (v *visitState) mustRare() *visitRare {
	if v.rare == nil {
		v.rare = &visitRare{}
	}
	return v.rare
}

// outage is the outage of v's host under way (nil: none).
func (v *visitState) outage() *outage {
	if v.rare == nil {
		return nil
	}
	return v.rare.down
}

// setOutage sets the outage of v's host (nil: it answers).
func (v *visitState) setOutage(o *outage) {
	if v.rare == nil && o == nil {
		return
	}
	v.mustRare().down = o
	v.tidyRare()
}

func (v *visitState) tidyRare() {
	if v.rare.retries == nil && v.rare.movedTo == "" && v.rare.down == nil {
		v.rare = nil
	}
}

type retry struct {
	rec     string // meta+suffix
	attempt int
}

// hasWork reports whether the visit state has something to fetch.
func (v *visitState) hasWork() bool {
	return v.queue.len() > 0 || len(v.retries()) > 0 || v.onDisk > 0
}

// queued is the number of URLs the visit state holds.
func (v *visitState) queued() int64 {
	return int64(v.queue.len()+len(v.retries())) + v.onDisk
}
