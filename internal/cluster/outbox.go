package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/petrel-crawler/petrel/internal/atomicfile"
	"github.com/petrel-crawler/petrel/internal/framelog"
	"github.com/petrel-crawler/petrel/internal/notify"
)

// Outbox is the sender's durable store of batches not yet acknowledged:
// an append-only log of put and ack frames (outboxlog.go has its format
// and invariants: group-committed fsyncs, compaction). A batch is durable
// in the log before Put returns, and leaves it only when its receiver
// acknowledged it (Ack), i.e. after the receiver's inbox made it durable.
// So a batch accepted by the outbox survives a kill of either side, and
// nothing in it is ever rolled back: a restart finds every unacknowledged
// batch again, under the same id.
//
// Each destination holds at most Limit bytes; Put waits while it is full,
// which slows the finding agent's parsers down to the pace of the slowest
// owner (back-pressure, no drop, no unbounded buffer).
type Outbox struct {
	dir       string
	limit     int64
	segSize   int64
	fsyncFile func(*os.File) error // (*os.File).Sync, or a test's tracer

	mu          sync.Mutex
	w           *framelog.Writer // the head segment; its positions: bytes written by this process
	changed     notify.Signal    // at every Put or Ack
	dests       map[string]*outQueue
	segs        []*outSeg // oldest first; the last is the head
	frames      []byte    // frames gathered for the next write (acks)
	closed      bool
	compactions int

	written atomic.Int64 // bytes of the batches put (their wire forms)
}

type outQueue struct {
	entries []OutEntry // in sending order
	bytes   int64
	records int64 // of the entries' batches
	held    int64 // bytes of the entries' wire forms kept in memory
}

// heldPerDest bounds the wire forms the outbox keeps in memory for each
// destination besides the log, so that the first send of a batch does
// not read it back; a batch over it, or found at open, is read from the
// log.
const heldPerDest = 8 << 20

// OutEntry is one batch waiting in the outbox.
type OutEntry struct {
	ID      BatchID
	Dest    string
	Bytes   int64 // of its wire form
	Records int   // the count its wire form's header declares (batch.go)

	seg  *outSeg // where its last put is
	off  int64   // of the wire form in seg
	wire []byte  // the wire form, when kept in memory
}

// OutPut is one batch given to PutAll.
type OutPut struct {
	Dest string
	ID   BatchID
	Wire []byte
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// ValidName reports whether s can name an agent: 1 to 64 letters, digits,
// dots, dashes and underscores, not starting with a punctuation mark.
func ValidName(s string) bool { return nameRE.MatchString(s) }

// OpenOutbox opens (creating) the outbox in dir, finding every batch a
// previous process left unacknowledged. limit bounds each destination's
// bytes (0: 256 MiB).
func OpenOutbox(dir string, limit int64) (*Outbox, error) {
	return openOutbox(dir, limit, outSegBytes, (*os.File).Sync)
}

func openOutbox(dir string, limit, segSize int64, fsync func(*os.File) error) (*Outbox, error) {
	if limit <= 0 {
		limit = 256 << 20
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("cluster: outbox: %w", err)
	}
	o := &Outbox{dir: dir, limit: limit, segSize: segSize, fsyncFile: fsync,
		dests: map[string]*outQueue{}}
	if err := o.refuseFilesFormat(); err != nil {
		return nil, fmt.Errorf("cluster: outbox: %w", err)
	}
	o.w = framelog.NewWriter(&o.mu, fsync)
	if err := o.openLog(); err != nil {
		if o.w.Size() > 0 {
			o.w.Close()
		}
		return nil, fmt.Errorf("cluster: outbox: %w", err)
	}
	return o, nil
}

func (o *Outbox) queue(dest string) *outQueue {
	q := o.dests[dest]
	if q == nil {
		q = new(outQueue)
		o.dests[dest] = q
	}
	return q
}

// Changed returns a channel closed at the next Put or Ack.
func (o *Outbox) Changed() <-chan struct{} { return o.changed.Wait() }

// Put stores a batch for dest and returns once it is durable. It waits
// while dest's queue is full, until ctx ends; with wait false it stores
// the batch over the limit instead (a stopping agent's last batches, so
// that what it found is kept rather than dropped). wire is not retained.
func (o *Outbox) Put(ctx context.Context, dest string, id BatchID, wire []byte, wait bool) error {
	return o.PutAll(ctx, []OutPut{{Dest: dest, ID: id, Wire: wire}}, wait)
}

// PutAll stores batches as Put does, with one fsync for all of them (and
// for the batches other goroutines put meanwhile). When a destination is
// full it first makes the batches before durable and offers them to the
// senders, then waits. On an error, the batches before the failing one
// are stored.
func (o *Outbox) PutAll(ctx context.Context, puts []OutPut, wait bool) error {
	var done []OutEntry
	var upTo int64
	for _, p := range puts {
		if !ValidName(p.Dest) {
			return errors.Join(o.publish(done, upTo), fmt.Errorf("cluster: outbox: bad destination %q", p.Dest))
		}
		if len(p.Wire) > MaxBatchBytes { // its log would read it back as torn
			return errors.Join(o.publish(done, upTo), fmt.Errorf("cluster: outbox: batch of %d bytes, over %d", len(p.Wire), MaxBatchBytes))
		}
		if !o.reserve(p.Dest, int64(len(p.Wire)), wait) {
			if err := o.publish(done, upTo); err != nil {
				return err
			}
			done = done[:0]
			if err := o.awaitRoom(ctx, p.Dest, int64(len(p.Wire))); err != nil {
				return err
			}
		}
		e, end, err := o.write(p)
		if err != nil {
			return errors.Join(o.publish(done, upTo), err)
		}
		done, upTo = append(done, e), end
	}
	return o.publish(done, upTo)
}

// reserve counts n bytes against dest's limit if there is room for them
// (always with wait false, and for a first batch into an empty queue).
func (o *Outbox) reserve(dest string, n int64, wait bool) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	q := o.queue(dest)
	if wait && q.bytes > 0 && q.bytes+n > o.limit {
		return false
	}
	q.bytes += n
	return true
}

// awaitRoom waits until dest has room for n bytes and reserves them; it
// returns ErrClosed once the outbox is closed, ctx's error once ctx ends.
func (o *Outbox) awaitRoom(ctx context.Context, dest string, n int64) error {
	for {
		o.mu.Lock()
		if o.closed {
			o.mu.Unlock()
			return ErrClosed
		}
		q := o.queue(dest)
		if q.bytes == 0 || q.bytes+n <= o.limit {
			q.bytes += n
			o.mu.Unlock()
			return nil
		}
		ch := o.changed.Wait()
		o.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// write appends p's put frame (its bytes already reserved) and returns
// its entry, not yet offered to the senders, and the log position after
// it.
func (o *Outbox) write(p OutPut) (OutEntry, int64, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	q := o.queue(p.Dest)
	n := int64(len(p.Wire))
	err := ErrClosed
	if !o.closed {
		err = nil
		if o.segs[len(o.segs)-1].size >= o.segSize {
			err = o.rollLocked()
		}
	}
	var off int64
	if err == nil {
		off, err = o.writeFrameLocked(framePut, p.Dest, p.ID, p.Wire)
	}
	if err != nil {
		q.bytes -= n
		o.changed.Notify()
		return OutEntry{}, 0, err
	}
	s := o.segs[len(o.segs)-1]
	s.held++
	s.heldBytes += n
	s.pending++
	o.written.Add(n)
	e := OutEntry{ID: p.ID, Dest: p.Dest, Bytes: n, Records: wireRecords(p.Wire), seg: s, off: off}
	q.records += int64(e.Records)
	if q.held+n <= heldPerDest {
		e.wire = slices.Clone(p.Wire)
		q.held += n
	}
	return e, o.w.End(), nil
}

// publish waits until the log is durable up to upTo, then offers the
// entries to the senders; if the fsync failed, they are given up (their
// Put fails).
func (o *Outbox) publish(es []OutEntry, upTo int64) error {
	if len(es) == 0 {
		return nil
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	err := o.w.Wait(upTo)
	for _, e := range es {
		e.seg.pending--
		q := o.queue(e.Dest)
		if err != nil {
			o.forgetLocked(q, e)
			continue
		}
		i, _ := slices.BinarySearchFunc(q.entries, e, compareEntries)
		q.entries = slices.Insert(q.entries, i, e)
	}
	o.changed.Notify()
	if err != nil {
		return fmt.Errorf("cluster: outbox: sync: %w", err)
	}
	return o.dropLocked()
}

// forgetLocked undoes the accounting of an entry leaving the outbox.
func (o *Outbox) forgetLocked(q *outQueue, e OutEntry) {
	q.bytes -= e.Bytes
	q.records -= int64(e.Records)
	if e.wire != nil {
		q.held -= e.Bytes
	}
	e.seg.held--
	e.seg.heldBytes -= e.Bytes
}

func compareEntries(a, b OutEntry) int {
	if a.ID.Incarnation != b.ID.Incarnation {
		return cmpU(a.ID.Incarnation, b.ID.Incarnation)
	}
	return cmpU(a.ID.Seq, b.ID.Seq)
}

func cmpU(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// writeDurable writes b to path through a temporary: fsync, rename, fsync
// of the directory.
func writeDurable(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return atomicfile.WriteBytes(path, b, atomicfile.Options{Sync: true, SyncDir: true})
}

// Pending returns up to n of dest's batches in sending order, skipping
// those skip reports true for (e.g. in flight).
func (o *Outbox) Pending(dest string, n int, skip func(BatchID) bool) []OutEntry {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []OutEntry
	for _, e := range o.queue(dest).entries {
		if len(out) >= n {
			break
		}
		if skip == nil || !skip(e.ID) {
			out = append(out, e)
		}
	}
	return out
}

// Ack removes an acknowledged batch (nothing if it is not held). Its ack
// frame is written later, with the next batch put, and not fsynced.
func (o *Outbox) Ack(e OutEntry) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	q := o.queue(e.Dest)
	i := slices.IndexFunc(q.entries, func(x OutEntry) bool { return x.ID == e.ID })
	if i < 0 {
		return nil
	}
	o.forgetLocked(q, q.entries[i])
	q.entries = slices.Delete(q.entries, i, i+1)
	o.changed.Notify()
	if o.closed {
		return ErrClosed
	}
	if _, err := o.writeFrameLocked(frameAck, e.Dest, e.ID, nil); err != nil {
		return err
	}
	return o.dropLocked()
}

// Read returns the wire form of a held batch (not to be modified).
func (o *Outbox) Read(e OutEntry) ([]byte, error) {
	if e.wire != nil {
		return e.wire, nil
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	// Where it is now: a compaction may have copied it since e was taken.
	q := o.queue(e.Dest)
	i := slices.IndexFunc(q.entries, func(x OutEntry) bool { return x.ID == e.ID })
	if i < 0 {
		return nil, fmt.Errorf("cluster: outbox: batch %s for %s is no longer held", e.ID, e.Dest)
	}
	return o.readLocked(q.entries[i])
}

// Dests returns the destinations holding batches.
func (o *Outbox) Dests() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []string
	for d, q := range o.dests {
		if len(q.entries) > 0 {
			out = append(out, d)
		}
	}
	slices.Sort(out)
	return out
}

// Len returns the batches and bytes held for every destination.
func (o *Outbox) Len() (batches int, bytes int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, q := range o.dests {
		batches += len(q.entries)
		bytes += q.bytes
	}
	return
}

// Records returns the records of the batches held for every destination
// and of those being put (as Len's bytes count them): for the batches of
// URLs the cluster sends, their URLs.
func (o *Outbox) Records() int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	var n int64
	for _, q := range o.dests {
		n += q.records
	}
	return n
}

// Syncs returns the fsyncs the outbox has made; Written the bytes of the
// batches put (wire forms, without the log's framing or copies).
func (o *Outbox) Syncs() int64   { return o.w.Syncs() }
func (o *Outbox) Written() int64 { return o.written.Load() }

// Close fsyncs and closes the log; the outbox refuses Puts after it.
func (o *Outbox) Close() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return nil
	}
	o.closed = true
	o.changed.Notify() // wakes the puts waiting for room: they return ErrClosed
	_, err := o.writeLocked(nil)
	return errors.Join(err, o.w.Close())
}
