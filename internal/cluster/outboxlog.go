package cluster

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/petrel-crawler/petrel/internal/framelog"
)

// The outbox's log (state/cluster/outbox/) is a run of segment files,
// numbered from 1 in the order they were started, 20 decimal digits and
// ".log" (framelog.SegmentPath). Each segment is the magic and format
// version "PTO1", then frames (package framelog) whose body is
//
//	byte 'P' (a batch put) or 'A' (a batch acknowledged)
//	uvarint len(dest), dest   the receiving agent
//	uvarint len(sender), sender, uvarint incarnation, uvarint seq: the batch id
//	'P' only: the batch's wire form (batch.go), to the end of the body
//
// The outbox counts each held batch's records from its wire form's
// header (its count of records, before the compressed block), read at
// the put and at open: the log has no count of its own.
//
// Invariants:
//   - A put frame is fsynced before Put returns and before the batch is
//     offered to a sender; a new segment's directory entry is fsynced
//     before any frame in it counts as durable. Puts running at once
//     share one fsync (group commit).
//   - An ack frame is not fsynced, and is written with the next put frame
//     (or at a roll or a close): lost in a crash, it only makes the batch
//     be sent again, and the receiver knows its id.
//   - At open, a batch is held if a put of its id is in the log and no ack
//     of it follows; the same id put twice (a compaction's copy) is one
//     batch, at its last put.
//   - Segments are removed oldest first only, once none of the batches put
//     in them is held: an ack in a removed segment names only batches of
//     segments removed before it, so no acknowledged batch comes back.
//   - Bounded: when the log is larger than twice the bytes it holds plus
//     four segments, the oldest segments' held batches are copied to the
//     head (compaction) and each such segment is removed once its copies
//     are durable.
//   - A torn or corrupt frame at the end of the last segment (a kill
//     during a write) is cut at open; one in another segment makes open
//     fail with its segment and offset.
const outboxMagic = "PTO1"

const (
	framePut = 'P'
	frameAck = 'A'
)

// outSegBytes is the size at which a new segment is started.
const outSegBytes = 16 << 20

// outSeg is one segment of the log.
type outSeg struct {
	num       uint64
	size      int64 // bytes in the file
	held      int   // batches put in it, not acknowledged nor copied on
	heldBytes int64
	pending   int   // of those, written and not yet published (PutAll under way)
	copiedTo  int64 // compacted: removable once the log is durable to here
}

func (o *Outbox) segPath(num uint64) string { return framelog.SegmentPath(o.dir, num) }

// appendFrameHead appends a frame's header and the body up to the wire
// form, for a body ending with wire (nil for an ack).
func appendFrameHead(dst []byte, kind byte, dest string, id BatchID, wire []byte) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0, 0, 0, 0, 0, kind)
	dst = binary.AppendUvarint(dst, uint64(len(dest)))
	dst = append(dst, dest...)
	dst = binary.AppendUvarint(dst, uint64(len(id.Sender)))
	dst = append(dst, id.Sender...)
	dst = binary.AppendUvarint(dst, id.Incarnation)
	dst = binary.AppendUvarint(dst, id.Seq)
	framelog.PutHeader(dst[start:], dst[start+framelog.HeaderLen:], wire)
	return dst
}

// outFrame is a frame read back: its kind, destination, batch id, and for
// a put the wire form's offset in the segment, length and records.
type outFrame struct {
	kind    byte
	dest    string
	id      BatchID
	off     int64
	n       int64
	records int
}

// maxOutFrame bounds a frame's body: a batch and its destination and id.
const maxOutFrame = MaxBatchBytes + 1<<10

// parseFrameBody parses a body read at offset bodyOff of its segment.
func parseFrameBody(body []byte, bodyOff int64) (outFrame, error) {
	var f outFrame
	if len(body) < 1 || body[0] != framePut && body[0] != frameAck {
		return f, framelog.ErrTorn
	}
	f.kind = body[0]
	r := fields{p: body[1:]}
	f.dest = r.str(255)
	f.id.Sender = r.str(255)
	f.id.Incarnation = r.uvarint()
	f.id.Seq = r.uvarint()
	p := r.p
	if r.bad || !ValidName(f.dest) || f.kind == frameAck && len(p) != 0 {
		return f, framelog.ErrTorn
	}
	f.off = bodyOff + int64(len(body)-len(p))
	f.n = int64(len(p))
	f.records = wireRecords(p)
	return f, nil
}

// newSegmentLocked starts segment num as the head (framelog.Writer.Start:
// its magic and directory entry durable before any frame in it).
func (o *Outbox) newSegmentLocked(num uint64) error {
	if err := o.w.Start(o.segPath(num), outboxMagic); err != nil {
		return err
	}
	o.segs = append(o.segs, &outSeg{num: num, size: o.w.Size()})
	return nil
}

// rollLocked makes everything written durable, then starts the next
// segment and compacts the log if it holds too little of what it keeps;
// nothing if another writer rolled the log while this one waited for the
// fsync under way.
func (o *Outbox) rollLocked() error {
	o.w.Settle()
	if o.closed {
		return ErrClosed
	}
	if o.segs[len(o.segs)-1].size < o.segSize {
		return nil
	}
	if _, err := o.writeLocked(nil); err != nil {
		return err
	}
	if err := o.w.SyncNow(); err != nil {
		return err
	}
	if err := o.newSegmentLocked(o.segs[len(o.segs)-1].num + 1); err != nil {
		return err
	}
	return o.compactLocked()
}

// compactLocked copies the held batches of the oldest segments to the
// head while the log is larger than twice what it holds plus four
// segments; each copied segment goes once the copies are durable
// (dropLocked).
func (o *Outbox) compactLocked() error {
	var total, held int64
	for _, s := range o.segs {
		total += s.size
		held += s.heldBytes
	}
	for k := 0; k < len(o.segs)-1 && total > 2*held+4*o.segSize; k++ {
		s := o.segs[k]
		if s.copiedTo > 0 {
			total -= s.size
			continue
		}
		if s.pending > 0 {
			break // batches not yet published: not in the queues to be copied
		}
		head := o.segs[len(o.segs)-1]
		for _, q := range o.dests {
			for i := range q.entries {
				e := &q.entries[i]
				if e.seg != s {
					continue
				}
				wire, err := o.readLocked(*e)
				if err != nil {
					return fmt.Errorf("compaction: %w", err)
				}
				off, err := o.writeFrameLocked(framePut, e.Dest, e.ID, wire)
				if err != nil {
					return fmt.Errorf("compaction: %w", err)
				}
				s.held--
				s.heldBytes -= e.Bytes
				head.held++
				head.heldBytes += e.Bytes
				e.seg, e.off = head, off
				total += e.Bytes
			}
		}
		s.copiedTo = o.w.End()
		total -= s.size
		o.compactions++
	}
	return nil
}

// writeFrameLocked appends one frame to the head and returns the offset
// of its wire form there. Ack frames are gathered in memory and written
// with the next put frame (one write), or when maxAckBytes of them wait:
// an ack need not be durable, and a write while the head is being
// fsynced may wait for the fsync.
func (o *Outbox) writeFrameLocked(kind byte, dest string, id BatchID, wire []byte) (int64, error) {
	o.frames = appendFrameHead(o.frames, kind, dest, id, wire)
	if kind == frameAck && len(o.frames) < maxAckBytes {
		return 0, nil
	}
	return o.writeLocked(wire)
}

// maxAckBytes bounds the ack frames gathered before they are written.
const maxAckBytes = 64 << 10

// writeLocked writes the frames gathered (the last one's body ending with
// wire) and wire, and returns the offset of wire. A failed write is cut
// off again (framelog.Writer.Write), the gathered acks dropped: their
// batches would only be sent again.
func (o *Outbox) writeLocked(wire []byte) (int64, error) {
	n := int64(len(o.frames))
	off, err := o.w.Write(o.frames, wire)
	o.frames = o.frames[:0]
	if err != nil {
		return 0, fmt.Errorf("cluster: outbox: %w", err)
	}
	o.segs[len(o.segs)-1].size = o.w.Size()
	return off + n, nil
}

// dropLocked removes the oldest segments while none of their batches is
// held (and a compacted one's copies are durable), never the head.
func (o *Outbox) dropLocked() error {
	for len(o.segs) > 1 {
		s := o.segs[0]
		if s.held > 0 || s.copiedTo > o.w.Durable() {
			return nil
		}
		if err := os.Remove(o.segPath(s.num)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("cluster: outbox: %w", err)
		}
		o.segs = o.segs[1:]
	}
	return nil
}

// readLocked returns e's wire form: from memory, or read from its segment.
func (o *Outbox) readLocked(e OutEntry) ([]byte, error) {
	if e.wire != nil {
		return e.wire, nil
	}
	f, err := os.Open(o.segPath(e.seg.num))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, e.Bytes)
	if _, err := f.ReadAt(b, e.off); err != nil {
		return nil, fmt.Errorf("cluster: outbox: batch %s: %w", e.ID, err)
	}
	return b, nil
}

// openLog reads the segments in dir, finding every held batch, and opens
// the last one (its torn end cut) as the head, or starts segment 1.
func (o *Outbox) openLog() error {
	nums, err := framelog.Segments(o.dir)
	if err != nil {
		return err
	}
	type key struct {
		dest string
		id   BatchID
	}
	found := map[key]OutEntry{}
	var head []byte
	nums = slices.DeleteFunc(nums, func(n uint64) bool { return n == 0 })
	for i, num := range nums {
		s := &outSeg{num: num}
		var good int64
		var torn bool
		head, good, torn, err = framelog.Scan(o.segPath(num), outboxMagic, len(outboxMagic), maxOutFrame, func(body []byte, off int64) error {
			f, err := parseFrameBody(body, off)
			if err != nil {
				return err
			}
			k := key{f.dest, f.id}
			if old, ok := found[k]; ok { // acknowledged, or copied on
				old.seg.held--
				old.seg.heldBytes -= old.Bytes
				delete(found, k)
			}
			if f.kind == framePut {
				found[k] = OutEntry{ID: f.id, Dest: f.dest, Bytes: f.n, Records: f.records, seg: s, off: f.off}
				s.held++
				s.heldBytes += f.n
			}
			return nil
		})
		if err != nil {
			return err
		}
		if torn && i < len(nums)-1 {
			return fmt.Errorf("segment %s: torn or corrupt frame at offset %d", o.segPath(num), good)
		}
		s.size = good
		o.segs = append(o.segs, s)
	}
	for _, e := range found {
		q := o.queue(e.Dest)
		q.entries = append(q.entries, e)
		q.bytes += e.Bytes
		q.records += int64(e.Records)
	}
	for _, q := range o.dests {
		slices.SortFunc(q.entries, compareEntries)
	}
	if len(o.segs) == 0 {
		return o.newSegmentLocked(1)
	}
	last := o.segs[len(o.segs)-1]
	if head == nil { // killed while starting it
		o.segs = o.segs[:len(o.segs)-1]
		return o.newSegmentLocked(last.num)
	}
	if err := o.w.Open(o.segPath(last.num), last.size, 0); err != nil {
		return err
	}
	return o.dropLocked()
}

// refuseFilesFormat fails when the outbox directory holds the format
// before the log (a directory of batch files per destination): an
// earlier build's crawl is finished by that build, not read as empty.
func (o *Outbox) refuseFilesFormat() error {
	ents, err := os.ReadDir(o.dir)
	if err != nil {
		return err
	}
	for _, d := range ents {
		if d.IsDir() {
			return fmt.Errorf("%s holds batches in the format of an earlier build (a directory per destination): finish this crawl with the build that started it", filepath.Join(o.dir, d.Name()))
		}
	}
	return nil
}

// fields reads uvarints and length-prefixed strings from p, in order.
// After the first one that does not parse, every read returns a zero
// value and bad is set.
type fields struct {
	p   []byte
	bad bool
}

// uvarint reads one uvarint.
func (f *fields) uvarint() uint64 {
	v, k := binary.Uvarint(f.p)
	if k <= 0 {
		f.fail()
		return 0
	}
	f.p = f.p[k:]
	return v
}

// str reads a uvarint length of at most maxLen, then that many bytes.
func (f *fields) str(maxLen int) string {
	l := f.uvarint()
	if f.bad || l > uint64(maxLen) || l > uint64(len(f.p)) {
		f.fail()
		return ""
	}
	s := string(f.p[:l])
	f.p = f.p[l:]
	return s
}

func (f *fields) fail() { f.p, f.bad = nil, true }
