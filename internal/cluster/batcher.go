package cluster

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/petrel-crawler/petrel/internal/clock"
)

// batcher gathers routed records per destination and kind, and turns them
// into batches in the outbox when a buffer holds BatchURLs records or its
// oldest record is BatchDelay old. Records are copied; a buffer holds at
// most BatchURLs records or MaxBatchBytes/2 bytes, and at most one buffer
// per destination and kind fills while others are written, so memory is
// bounded by destinations × kinds × that.
type batcher struct {
	n *Node

	mu      sync.Mutex
	bufs    map[bufKey]*outBuf
	writing atomic.Int64      // batches being written to the outbox
	seqs    map[string]uint64 // last sequence number per destination (under mu)
	routed  atomic.Uint64     // records ever routed (for the idle check)
	closing atomic.Bool       // the agent is stopping: write over the outbox limit

	// Buffers of batches already written, for the next ones: gathering
	// and encoding then neither allocate nor grow a buffer record by
	// record.
	raws, wires spares
}

// spares keeps a few buffers for reuse; a buffer starts as large as the
// largest one given back, so it rarely grows.
type spares struct {
	mu   sync.Mutex
	free [][]byte
	size int
}

// maxSpares bounds the buffers kept (per list) and maxSpareBytes their size.
const (
	maxSpares     = 2
	maxSpareBytes = maxRawBytes
)

func (s *spares) get() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := len(s.free); n > 0 {
		b := s.free[n-1]
		s.free = s.free[:n-1]
		if cap(b) >= s.size {
			return b[:0]
		}
	}
	return make([]byte, 0, s.size)
}

func (s *spares) put(b []byte) {
	if cap(b) > maxSpareBytes {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.size = max(s.size, len(b))
	if len(s.free) < maxSpares {
		s.free = append(s.free, b)
	}
}

type bufKey struct {
	dest string
	kind Kind
}

// outBuf is a batch being gathered: its records laid out as in the wire
// form before compression (appendRecord), so that gathering allocates
// nothing per record and encoding only compresses.
type outBuf struct {
	raw   []byte
	count int
	since time.Time
	epoch uint64 // the view in force when its first record was routed
}

// maxRawBytes bounds a batch's records before compression; compressed,
// the synthetic web's URLs take a fifth of that, so a batch's wire form
// stays near 4 MiB at most.
const maxRawBytes = 24 << 20

func newBatcher(n *Node) *batcher {
	return &batcher{n: n, bufs: map[bufKey]*outBuf{}, seqs: map[string]uint64{}}
}

// addAll routes recs, in order, to dest in batches of kind, taking the
// lock and finding the buffer once for all of them (once more after each
// batch they fill). It may write batches (and then wait while the
// destination's outbox is full); on an error, the records before the
// batch whose write failed are routed and the rest are not.
func (b *batcher) addAll(ctx context.Context, dest string, kind Kind, recs [][]byte) error {
	b.routed.Add(uint64(len(recs)))
	k := bufKey{dest, kind}
	for len(recs) > 0 {
		var full *outBuf
		b.mu.Lock()
		buf := b.bufs[k]
		if buf == nil {
			buf = &outBuf{since: time.Now(), raw: b.raws.get(), epoch: b.n.viewEpoch()}
			b.bufs[k] = buf
		}
		for len(recs) > 0 && full == nil {
			buf.raw = appendRecord(buf.raw, recs[0])
			buf.count++
			recs = recs[1:]
			if buf.count >= b.n.cfg.BatchURLs || len(buf.raw) >= maxRawBytes {
				full = buf
				delete(b.bufs, k)
				b.writing.Add(1)
			}
		}
		b.mu.Unlock()
		if full == nil {
			return nil
		}
		err := b.write(ctx, []outBatch{{k: k, buf: full}}, !b.closing.Load())
		b.writing.Add(-1)
		if err != nil {
			return err
		}
	}
	return nil
}

// flushOld writes the buffers older than BatchDelay (all with force),
// with one fsync of the outbox for all of them.
func (b *batcher) flushOld(ctx context.Context, force bool) error {
	now := time.Now()
	var due []outBatch
	b.mu.Lock()
	for k, buf := range b.bufs {
		if force || now.Sub(buf.since) >= b.n.cfg.BatchDelay {
			due = append(due, outBatch{k: k, buf: buf})
			delete(b.bufs, k)
			b.writing.Add(1)
		}
	}
	b.mu.Unlock()
	if len(due) == 0 {
		return nil
	}
	defer b.writing.Add(-int64(len(due)))
	return b.write(ctx, due, !b.closing.Load())
}

// putNow writes recs, by destination, as batches of kind routed under
// the view of epoch, at once and without waiting for room in the outbox:
// the records of a batch refused for its view (fence.go), whose removal
// follows, so that the outbox holds one batch over its bound at most.
func (b *batcher) putNow(ctx context.Context, kind Kind, epoch uint64, byDest map[string][][]byte) error {
	obs := make([]outBatch, 0, len(byDest))
	count := 0
	for dest, recs := range byDest {
		count += len(recs)
		buf := &outBuf{since: time.Now(), raw: b.raws.get(), epoch: epoch}
		for _, r := range recs {
			buf.raw = appendRecord(buf.raw, r)
		}
		buf.count = len(recs)
		obs = append(obs, outBatch{k: bufKey{dest, kind}, buf: buf})
	}
	b.routed.Add(uint64(count))
	b.writing.Add(int64(len(obs)))
	defer b.writing.Add(-int64(len(obs)))
	return b.write(ctx, obs, false)
}

// outBatch is a buffer on its way to the outbox.
type outBatch struct {
	k   bufKey
	buf *outBuf
}

// write encodes buffers as batches and stores them in the outbox,
// waiting for room in it with wait.
func (b *batcher) write(ctx context.Context, obs []outBatch, wait bool) error {
	n := b.n
	puts := make([]OutPut, len(obs))
	for i, ob := range obs {
		// Sequence numbers count per destination, so that each receiver
		// sees 1, 2, 3… from each incarnation and keeps a watermark
		// (idSet).
		b.mu.Lock()
		b.seqs[ob.k.dest]++
		seq := b.seqs[ob.k.dest]
		b.mu.Unlock()
		bt := &Batch{ID: BatchID{Sender: n.cfg.Name, Incarnation: n.incarnation, Seq: seq}, Kind: ob.k.kind, Epoch: ob.buf.epoch}
		puts[i] = OutPut{Dest: ob.k.dest, ID: bt.ID, Wire: bt.encodeRaw(b.wires.get(), ob.buf.raw, ob.buf.count)}
		b.raws.put(ob.buf.raw)
	}
	err := n.outbox.PutAll(ctx, puts, wait)
	for i, p := range puts {
		b.wires.put(p.Wire) // PutAll has written it
		if err == nil {
			n.activity.Add(1)
			n.counts.sentBatches.Add(1)
			n.counts.sentURLs.Add(uint64(obs[i].buf.count))
		}
	}
	if err != nil {
		n.log.Error("cluster: outbox", "batches", len(puts), "err", err)
	}
	return err
}

// empty reports whether no record waits in a buffer or is being written.
func (b *batcher) empty() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.bufs) == 0 && b.writing.Load() == 0
}

func (b *batcher) loop(ctx context.Context) {
	clock.Every(ctx, max(b.n.cfg.BatchDelay/2, time.Millisecond), func() { b.flushOld(ctx, false) })
}
