package frontier

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/petrel-crawler/petrel/internal/stats"
)

// DropReason says why the frontier gave up a URL without fetching it.
type DropReason uint8

// The reasons the frontier drops a URL it held or was offered.
const (
	// DropBrokenHost: its visit state failed MaxFailures URLs in a row and
	// was purged (BUbiNG's broken visit states).
	DropBrokenHost DropReason = iota + 1
	// DropRobotsUnavailable: its authority's robots.txt could not be
	// fetched after every retry.
	DropRobotsUnavailable
	// DropDNS: its host's name did not resolve.
	DropDNS
	// DropAddress: the address guard refused its host's address.
	DropAddress
	// DropBlocked: Drop (the operator's blocklist) emptied its visit state.
	DropBlocked
	// DropOverBudget: its politeness key had admitted MaxURLsPerKey URLs.
	DropOverBudget
	// DropHostDown: its host could not be reached (Unreachable) for
	// HostDownGiveUp (hostdown.go).
	DropHostDown
	// DropRetries: it failed on its first try and on each of MaxRetries
	// retries (a 5xx, or a failure after the connection was made).
	DropRetries
)

func (r DropReason) String() string {
	switch r {
	case DropBrokenHost:
		return "broken-host"
	case DropRobotsUnavailable:
		return "robots-unavailable"
	case DropDNS:
		return "dns"
	case DropAddress:
		return "address"
	case DropBlocked:
		return "blocklist"
	case DropOverBudget:
		return "over-budget"
	case DropHostDown:
		return "host-down"
	case DropRetries:
		return "retries-exhausted"
	}
	return "unknown"
}

// Bounds of the drop log.
const (
	dropJobs      = 1024            // jobs waiting for the drop goroutine
	dropHeldBytes = 64 << 20        // RAM queues of purged visit states held until told
	dropBatch     = 256             // single drops gathered into one job
	dropChunk     = 1024            // virtualized records read at a time
	dropDrainWait = 2 * time.Second // how long the end of Run waits for the jobs left
)

// dropLog tells Config.Dropped of every URL the scheduler gives up, on a
// goroutine of its own: purging a visit state of 10⁵ URLs costs the
// scheduler only handing its queue over (the records in RAM move to the
// job; those on disk are read and removed by the drop goroutine). It is
// bounded by the jobs waiting (dropJobs) and the RAM they hold
// (dropHeldBytes): a job over either bound is not queued, and its URLs
// are counted in DropsUnlogged instead (so are those left when the drain
// at the end of Run times out). Every dropped URL is counted by its
// reason's counter whether or not it is told.
//
// The scheduler side (purged, one, flush) runs on the scheduler goroutine.
type dropLog struct {
	fn    func(url string, m Meta, why DropReason)
	virt  Virtualizer
	stats *stats.Crawl
	log   *slog.Logger

	jobs    chan *dropJob
	held    atomic.Int64 // RAM bytes of the queued jobs
	givenUp atomic.Bool  // the drain at the end of Run timed out: count, do not tell
	batch   *dropJob     // single drops not yet queued
	wg      sync.WaitGroup
}

// dropJob is URLs to tell of: a purged visit state's queue (its retries,
// its RAM queue and onDisk records of the virtualizer's queue id, each
// URL being prefix+suffix), or single records (meta+URL) with reasons.
type dropJob struct {
	why     DropReason
	prefix  string
	retries []retry
	queue   pathQueue
	id      uint64
	onDisk  int64
	singles []droppedRecord
	bytes   int64
}

type droppedRecord struct {
	rec string // meta+URL
	why DropReason
}

func (j *dropJob) urls() int64 {
	return int64(len(j.retries)+j.queue.len()+len(j.singles)) + j.onDisk
}

// start runs the drop goroutine until stop.
func (d *dropLog) start() {
	if d.fn == nil {
		return
	}
	d.jobs = make(chan *dropJob, dropJobs)
	d.wg.Add(1)
	go d.run()
}

// stop queues the last single drops and waits up to dropDrainWait for
// the jobs queued; the URLs not told by then are counted as unlogged.
func (d *dropLog) stop() {
	if d.jobs == nil {
		return
	}
	d.flush()
	close(d.jobs)
	done := make(chan struct{})
	go func() { d.wg.Wait(); close(done) }()
	t := time.NewTimer(dropDrainWait)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		d.givenUp.Store(true)
		<-done
	}
}

// purged hands over the URLs of v, purged for why: its retries and RAM
// queue (which the caller then drops from v) and its onDisk records. It
// reports whether the job took the virtualized records (the drop
// goroutine then reads and removes them); when false, the caller removes
// them, and they and the rest were counted as unlogged unless told.
func (d *dropLog) purged(v *visitState, why DropReason) (tookDisk bool) {
	if d.jobs == nil {
		return false
	}
	j := &dropJob{why: why, prefix: v.prefix(), retries: v.retries(), queue: v.queue, id: v.id, onDisk: v.onDisk,
		bytes: int64(v.queue.bytes() + 64*len(v.retries()))}
	if j.urls() == 0 {
		return false
	}
	return d.queue(j)
}

// one tells of one record (meta+suffix of prefix) dropped for why.
func (d *dropLog) one(why DropReason, prefix, rec string) {
	if d.jobs == nil {
		return
	}
	if d.batch == nil {
		d.batch = &dropJob{}
	}
	d.batch.singles = append(d.batch.singles, droppedRecord{rec: rec[:MetaLen] + prefix + rec[MetaLen:], why: why})
	d.batch.bytes += int64(len(prefix) + len(rec) + 32)
	if len(d.batch.singles) >= dropBatch {
		d.flush()
	}
}

// flush queues the single drops gathered (the scheduler calls it once a
// step).
func (d *dropLog) flush() {
	if d.batch != nil {
		j := d.batch
		d.batch = nil
		d.queue(j)
	}
}

// queue hands j to the drop goroutine, or counts its URLs as unlogged
// when a bound is reached.
func (d *dropLog) queue(j *dropJob) bool {
	if d.held.Add(j.bytes) <= dropHeldBytes {
		select {
		case d.jobs <- j:
			return true
		default:
		}
	}
	d.held.Add(-j.bytes)
	d.stats.DropsUnlogged.Add(j.urls())
	return false
}

func (d *dropLog) run() {
	defer d.wg.Done()
	for j := range d.jobs {
		d.tell(j)
	}
}

// tell calls fn for each URL of j, in queue order, and removes its
// virtualized records. Once stop has timed out it only counts.
func (d *dropLog) tell(j *dropJob) {
	var told int64
	live := func() bool { return !d.givenUp.Load() }
	say := func(why DropReason, prefix string, rec []byte) {
		if len(rec) < MetaLen || !live() {
			return
		}
		m, err := DecodeMeta(rec)
		if err != nil {
			return
		}
		d.fn(prefix+string(rec[MetaLen:]), m, why)
		told++
	}
	for _, s := range j.singles {
		say(s.why, "", []byte(s.rec))
	}
	for _, r := range j.retries {
		say(j.why, j.prefix, []byte(r.rec))
	}
	j.queue.each(func(rec []byte) { say(j.why, j.prefix, rec) })
	if j.onDisk > 0 {
		for n := int64(0); n < j.onDisk && live(); {
			recs, err := d.virt.DequeueN(j.id, dropChunk)
			if err != nil {
				d.log.Error("frontier: read the virtualized URLs of a purged visit state", "urls", j.onDisk-n, "err", err)
			}
			if len(recs) == 0 {
				break
			}
			for _, rec := range recs {
				say(j.why, j.prefix, rec)
			}
			n += int64(len(recs))
		}
		if _, err := d.virt.Remove(j.id); err != nil {
			d.log.Error("frontier: virtualizer remove", "key", j.prefix, "err", err)
		}
	}
	d.held.Add(-j.bytes)
	if rest := j.urls() - told; rest > 0 {
		d.stats.DropsUnlogged.Add(rest)
	}
}
