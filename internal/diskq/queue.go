package diskq

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
)

const (
	queueExt      = ".dq"
	queueMetaName = "queue.meta"
)

var magicQueueMeta = [8]byte{'p', 'e', 't', 'r', 'e', 'l', 'Q', 'M'}

// qseg is one segment file of a Queue. size is the bytes of its blocks in
// the file; records not yet sealed in a block are counted by the Queue.
type qseg struct {
	seq  uint64
	size int64
}

// Queue is a persistent FIFO of byte records stored in segment files in one
// directory, with sequential I/O only: records are gathered in a block (the
// write buffer), and each block is compressed and appended to the last
// segment when it fills; records are read back from the first segment a
// block at a time. Fully consumed segments are deleted unless a Mark still
// needs them. A Queue is safe for concurrent use.
//
// The head (the next record to pop) is record rskip of the block at byte
// roff of segment rseq; when every record of that block has been popped,
// rskip is its count until the next Pop moves on. A Pop that finds no
// sealed block left takes the first record of the open block in RAM
// (pend[pendOff:]) without sealing it: the head is then at the end of the
// file (roff is the tail's size, rskip 0), which is where a seal writes
// the open block's records not yet popped, so a Position taken after a
// seal is always in a block of the file. A record pushed and popped while
// in the open block is never written.
type Queue struct {
	mu    sync.Mutex
	dir   string
	opts  Options
	log   *slog.Logger
	codec *blockCodec

	segs []qseg // existing segment files in increasing seq order; the last is the tail

	w        segmentWriter // on the last segment; writes whole blocks, buffers nothing
	dirDirty bool          // a segment file was created or removed since the last directory fsync
	pend     []byte        // the open block: records framed by appendRecord
	pendOff  int           // where pend's first record not yet popped starts
	pendN    int           // records in pend[pendOff:]
	cbuf     []byte        // the sealed block being written

	// reader, on the head segment
	r       *os.File
	rseq    uint64
	roff    int64 // offset of the head block
	rskip   int64 // records of the head block already popped
	rbuf    []byte
	rbufOff int64 // read-ahead: rbuf[:rlen] holds file bytes [rbufOff, rbufOff+rlen)
	rlen    int
	blk     blockState

	n        int64
	pins     []Position
	recovery Recovery
	err      error // sticky corruption error
	closed   bool
}

// blockState is the head block, decoded, while the reader is on it.
type blockState struct {
	loaded bool
	raw    []byte // its records; a slice of dec, or of rbuf for a stored block
	dec    []byte // decompression buffer
	data   []byte // stored data read beyond rbuf's size
	p      int    // where record rskip starts in raw
	count  int64
	end    int64 // offset of the next block
}

// Open opens the queue stored in dir, creating dir and an empty queue if
// needed. After a clean Close, the reopened queue holds exactly the records
// pushed and not popped before it. After a crash, Open recovers: the head
// goes back to where it was at the last Open, Sync, Mark or Close (records
// popped since come back), the tail is scanned and a torn last record is
// cut off and reported (see Recovery). Use OpenAt for exact recovery to a
// checkpoint.
func Open(dir string, opts Options) (*Queue, error) {
	opts = opts.withDefaults()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("diskq: open %s: %w", dir, err)
	}
	segs, rec, err := loadQueueSegments(dir, opts)
	if err != nil {
		return nil, err
	}
	meta, haveMeta, err := readQueueMeta(dir)
	if err != nil {
		return nil, err
	}
	q, err := newQueue(dir, opts)
	if err != nil {
		return nil, err
	}
	q.recovery = rec
	if len(segs) == 0 {
		if haveMeta && meta.pos.Len > 0 {
			return nil, fmt.Errorf("diskq: open %s: metadata lists %d records but no segment exists: %w", dir, meta.pos.Len, ErrCorrupt)
		}
		if err := q.w.start(1, 0); err != nil {
			return nil, err
		}
		q.segs = []qseg{{seq: 1, size: segHeaderSize}}
		q.dirDirty = true
		q.rseq, q.roff = 1, segHeaderSize
		if err := q.writeMetaLocked(false); err != nil {
			q.closeFiles()
			return nil, err
		}
		return q, nil
	}
	q.segs = segs
	last := segs[len(segs)-1]
	if haveMeta {
		q.pins = meta.pins
	}
	if haveMeta && meta.clean && rec.CutBytes == 0 && meta.pos.TailSegment == last.seq && meta.pos.TailOffset == last.size &&
		q.segIndex(meta.pos.Segment) >= 0 {
		q.rseq, q.roff, q.rskip, q.n = meta.pos.Segment, meta.pos.Offset, meta.pos.Skip, meta.pos.Len
	} else {
		q.recovery.Dirty = true
		q.rseq, q.roff = segs[0].seq, segHeaderSize
		if haveMeta && q.segIndex(meta.pos.Segment) >= 0 {
			q.rseq, q.roff, q.rskip = meta.pos.Segment, meta.pos.Offset, meta.pos.Skip
		}
		if err := q.scanLocked(); err != nil {
			return nil, err
		}
	}
	if err := q.w.open(q.tail().seq, q.tail().size); err != nil {
		return nil, err
	}
	if err := q.writeMetaLocked(false); err != nil {
		q.closeFiles()
		return nil, err
	}
	q.logRecovery()
	return q, nil
}

// OpenAt reopens the queue in dir at pos, a Position returned by Mark,
// typically after a crash: records popped after the mark come back, and
// records pushed after it are dropped (the tail is cut back to the mark).
// The segments pos needs must still exist; they do as long as pos has not
// been passed to Release. Marks taken after pos are forgotten; pos itself
// stays pinned until released.
func OpenAt(dir string, pos Position, opts Options) (*Queue, error) {
	opts = opts.withDefaults()
	if err := pos.validate(); err != nil {
		return nil, fmt.Errorf("diskq: open %s at mark: %w", dir, err)
	}
	segs, rec, err := loadQueueSegments(dir, opts)
	if err != nil {
		return nil, err
	}
	meta, haveMeta, err := readQueueMeta(dir)
	if err != nil {
		return nil, err
	}
	q, err := newQueue(dir, opts)
	if err != nil {
		return nil, err
	}
	q.recovery = rec
	q.segs = segs
	// Every segment from the mark's head to its tail must exist.
	hi := q.segIndex(pos.Segment)
	ti := q.segIndex(pos.TailSegment)
	if hi < 0 || ti < 0 || ti-hi != int(pos.TailSegment-pos.Segment) {
		return nil, fmt.Errorf("diskq: open %s at mark: segments %d..%d missing (released mark?): %w", dir, pos.Segment, pos.TailSegment, ErrCorrupt)
	}
	if q.segs[ti].size < pos.TailOffset {
		return nil, fmt.Errorf("diskq: open %s at mark: segment %d has %d bytes, mark needs %d: %w", dir, pos.TailSegment, q.segs[ti].size, pos.TailOffset, ErrCorrupt)
	}
	// Cut the tail back to the mark.
	var cut int64
	for _, s := range q.segs[ti+1:] {
		cut += s.size
		if err := os.Remove(q.segPath(s.seq)); err != nil {
			return nil, fmt.Errorf("diskq: open %s at mark: %w", dir, err)
		}
	}
	if extra := q.segs[ti].size - pos.TailOffset; extra > 0 {
		cut += extra
		if err := os.Truncate(q.segPath(pos.TailSegment), pos.TailOffset); err != nil {
			return nil, fmt.Errorf("diskq: open %s at mark: %w", dir, err)
		}
	}
	q.segs = q.segs[:ti+1]
	q.segs[ti].size = pos.TailOffset
	if cut > 0 {
		q.dirDirty = true
		q.recovery.Dirty = true
		q.recovery.CutSegment, q.recovery.CutOffset = pos.TailSegment, pos.TailOffset
		q.recovery.CutBytes += cut
	}
	if haveMeta {
		for _, p := range meta.pins {
			if !p.tailAfter(pos) && p != pos {
				q.pins = append(q.pins, p)
			}
		}
	}
	q.pins = append(q.pins, pos)
	q.rseq, q.roff, q.rskip, q.n = pos.Segment, pos.Offset, pos.Skip, pos.Len
	if err := q.w.open(q.tail().seq, q.tail().size); err != nil {
		return nil, err
	}
	if err := q.deleteConsumedLocked(); err != nil {
		q.closeFiles()
		return nil, err
	}
	if err := q.writeMetaLocked(false); err != nil {
		q.closeFiles()
		return nil, err
	}
	q.logRecovery()
	return q, nil
}

func newQueue(dir string, opts Options) (*Queue, error) {
	codec, err := newBlockCodec()
	if err != nil {
		return nil, err
	}
	q := &Queue{
		dir:   dir,
		opts:  opts,
		log:   opts.Logger,
		codec: codec,
		w:     newSegmentWriter(dir, queueExt, magicQueue, opts),
		pend:  make([]byte, 0, opts.BufferBytes),
		rbuf:  make([]byte, opts.BufferBytes),
	}
	q.w.buf = nil // blocks are written whole (writeBlock)
	return q, nil
}

func (q *Queue) logRecovery() {
	r := q.recovery
	if r.CutBytes > 0 {
		q.log.Warn("diskq: torn tail cut", "dir", q.dir, "segment", r.CutSegment, "offset", r.CutOffset, "bytes", r.CutBytes)
	} else if r.Dirty {
		q.log.Warn("diskq: queue was not closed cleanly; recovered", "dir", q.dir, "records", q.n)
	}
}

// loadQueueSegments lists and validates the segment files of dir. A last
// segment too short to hold its header (a crash during roll-over) is removed
// and reported in the returned Recovery.
func loadQueueSegments(dir string, opts Options) ([]qseg, Recovery, error) {
	var rec Recovery
	seqs, err := listSegments(dir, queueExt)
	if err != nil {
		return nil, rec, err
	}
	segs := make([]qseg, 0, len(seqs))
	for i, seq := range seqs {
		f, size, _, err := openSegment(dir, queueExt, magicQueue, seq, i == len(seqs)-1, &rec)
		if err != nil {
			return nil, rec, err
		}
		if f == nil {
			continue // torn segment removed
		}
		f.Close()
		if i > 0 && seq != seqs[i-1]+1 {
			return nil, rec, fmt.Errorf("diskq: open %s: segment %d follows %d: %w", dir, seq, seqs[i-1], ErrCorrupt)
		}
		segs = append(segs, qseg{seq: seq, size: size})
	}
	return segs, rec, nil
}

type queueMeta struct {
	clean bool
	pos   Position
	pins  []Position
}

// Metadata file "queue.meta", replaced atomically:
//
//	magic "petrelQM" | version uint32 (2) | flags uint32 (bit 0: clean close)
//	| state Position (53 bytes) | npins uint32 | npins × Position | crc uint32
//
// Version 1 (Positions of 45 bytes, in uncompressed segments) is refused
// with ErrOldFormat.
func readQueueMeta(dir string) (queueMeta, bool, error) {
	var m queueMeta
	b, err := os.ReadFile(filepath.Join(dir, queueMetaName))
	if errors.Is(err, os.ErrNotExist) {
		return m, false, nil
	}
	if err != nil {
		return m, false, fmt.Errorf("diskq: read metadata: %w", err)
	}
	bad := func(why string) (queueMeta, bool, error) {
		return m, false, fmt.Errorf("diskq: metadata %s: %s: %w", filepath.Join(dir, queueMetaName), why, ErrCorrupt)
	}
	if len(b) < 12 || [8]byte(b[:8]) != magicQueueMeta {
		return bad("bad magic")
	}
	if v := binary.LittleEndian.Uint32(b[8:]); v != queueFormat {
		if v < queueFormat {
			return m, false, fmt.Errorf("diskq: metadata %s: format version %d, this version reads %d: %w", filepath.Join(dir, queueMetaName), v, queueFormat, ErrOldFormat)
		}
		return bad(fmt.Sprintf("unsupported version %d", v))
	}
	if len(b) < 8+4+4+positionSize+4+4 {
		return bad("too short")
	}
	if crcOf(b[:len(b)-4]) != binary.LittleEndian.Uint32(b[len(b)-4:]) {
		return bad("checksum mismatch")
	}
	m.clean = binary.LittleEndian.Uint32(b[12:])&1 != 0
	p := b[16:]
	if err := m.pos.UnmarshalBinary(p[:positionSize]); err != nil {
		return m, false, err
	}
	p = p[positionSize:]
	np := int(binary.LittleEndian.Uint32(p))
	p = p[4:]
	if len(p) != np*positionSize+4 {
		return bad("pin count mismatch")
	}
	for i := 0; i < np; i++ {
		var pin Position
		if err := pin.UnmarshalBinary(p[:positionSize]); err != nil {
			return m, false, err
		}
		m.pins = append(m.pins, pin)
		p = p[positionSize:]
	}
	return m, true, nil
}

func (q *Queue) writeMetaLocked(clean bool) error {
	b := make([]byte, 0, 8+4+4+positionSize*(1+len(q.pins))+8)
	b = append(b, magicQueueMeta[:]...)
	b = binary.LittleEndian.AppendUint32(b, queueFormat)
	var flags uint32
	if clean {
		flags = 1
	}
	b = binary.LittleEndian.AppendUint32(b, flags)
	b = q.positionLocked().appendBinary(b)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(q.pins)))
	for _, p := range q.pins {
		b = p.appendBinary(b)
	}
	b = binary.LittleEndian.AppendUint32(b, crcOf(b))
	if q.dirDirty && q.opts.Sync {
		if err := syncDir(q.dir, q.opts.fsyncFile); err != nil {
			return err
		}
	}
	q.dirDirty = false
	return writeFileAtomic(q.dir, queueMetaName, b, q.opts.syncer())
}

func (q *Queue) segPath(seq uint64) string { return filepath.Join(q.dir, segName(seq, queueExt)) }

func (q *Queue) segIndex(seq uint64) int {
	if len(q.segs) == 0 || seq < q.segs[0].seq {
		return -1
	}
	i := int(seq - q.segs[0].seq)
	if i >= len(q.segs) {
		return -1
	}
	return i
}

func (q *Queue) tail() *qseg { return &q.segs[len(q.segs)-1] }

func (q *Queue) positionLocked() Position {
	t := q.tail()
	return Position{Segment: q.rseq, Offset: q.roff, Skip: q.rskip, TailSegment: t.seq, TailOffset: t.size, Len: q.n}
}

// scanLocked counts the valid records from the head to the end and cuts a
// torn tail off the last segment. An invalid block in any other segment is
// corruption.
func (q *Queue) scanLocked() error {
	q.n = 0
	hi := q.segIndex(q.rseq)
	for i := hi; i < len(q.segs); i++ {
		s := &q.segs[i]
		from := int64(segHeaderSize)
		if i == hi {
			from = q.roff
		}
		if from > s.size {
			// The head was recorded past data lost in the crash.
			if i != len(q.segs)-1 {
				return fmt.Errorf("diskq: segment %s: head offset %d beyond end %d: %w", q.segPath(s.seq), from, s.size, ErrCorrupt)
			}
			q.roff, q.rskip, from = s.size, 0, s.size
		}
		f, err := os.Open(q.segPath(s.seq))
		if err != nil {
			return fmt.Errorf("diskq: scan: %w", err)
		}
		headCount := int64(-1)
		end := scanBlocks(f, from, s.size, q.opts.BufferBytes, func(off int64, b blockHead) {
			q.n += int64(b.count)
			if i == hi && off == q.roff {
				headCount = int64(b.count)
			}
		})
		f.Close()
		if i == hi {
			switch {
			case headCount >= q.rskip:
				q.n -= q.rskip
			case headCount >= 0:
				return fmt.Errorf("diskq: segment %s offset %d: head is record %d of a block of %d: %w", q.segPath(s.seq), q.roff, q.rskip, headCount, ErrCorrupt)
			default:
				q.rskip = 0 // the head block was lost with the torn tail
			}
		}
		if end == s.size {
			continue
		}
		if err := cutTornTail(q.segPath(s.seq), s.seq, end, s.size, i == len(q.segs)-1, &q.recovery); err != nil {
			return err
		}
		s.size = end
	}
	return nil
}

// Push appends rec to the tail of the queue. The record is buffered in the
// open block; it is in the file once the block fills, or Sync, Mark, Scan
// or Close is called (a record popped before that is never written).
func (q *Queue) Push(rec []byte) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return ErrClosed
	}
	if len(rec) > MaxRecordBytes {
		return fmt.Errorf("diskq: push %d bytes: %w", len(rec), ErrTooLarge)
	}
	if q.pendOff >= q.opts.BufferBytes/2 { // pops have consumed half a buffer: drop it
		q.pend = q.pend[:copy(q.pend, q.pend[q.pendOff:])]
		q.pendOff = 0
	}
	q.pend = appendRecord(q.pend, rec)
	q.pendN++
	q.n++
	if len(q.pend)-q.pendOff >= q.opts.BufferBytes {
		return q.sealLocked()
	}
	return nil
}

// sealLocked compresses the records of the open block not yet popped, if
// any, and appends them as a block to the tail segment, rolling over first
// when the segment is full. On a write error the records stay in the open
// block.
func (q *Queue) sealLocked() error {
	if q.pendN == 0 {
		q.pend, q.pendOff = q.pend[:0], 0
		return nil
	}
	q.cbuf = q.codec.encode(q.cbuf, q.pend[q.pendOff:], q.pendN)
	sz := int64(len(q.cbuf))
	if q.w.full(q.tail().size, sz) {
		if err := q.rollLocked(); err != nil {
			return err
		}
	}
	if err := q.w.write(q.cbuf, "push"); err != nil {
		return err
	}
	q.tail().size += sz
	q.pend, q.pendOff, q.pendN = q.pend[:0], 0, 0
	if cap(q.pend) > 2*q.opts.BufferBytes { // after a record larger than the buffer
		q.pend = make([]byte, 0, q.opts.BufferBytes)
	}
	if cap(q.cbuf) > 2*q.opts.BufferBytes {
		q.cbuf = nil
	}
	return nil
}

// rollLocked seals the tail segment, closes it and starts the next one.
func (q *Queue) rollLocked() error {
	if err := q.w.sync("roll"); err != nil {
		return err
	}
	if err := q.w.f.Close(); err != nil {
		return fmt.Errorf("diskq: roll: %w", err)
	}
	q.w.f = nil
	seq := q.tail().seq + 1
	if err := q.w.start(seq, 0); err != nil {
		return err
	}
	q.segs = append(q.segs, qseg{seq: seq, size: segHeaderSize})
	q.dirDirty = true
	return nil
}

// Pop removes the record at the head of the queue and returns it appended
// to dst[:0]. It returns ok == false if the queue is empty. A checksum
// mismatch or a malformed block returns an error wrapping ErrCorrupt; the
// error is sticky, as the queue cannot know where the next block starts.
func (q *Queue) Pop(dst []byte) (rec []byte, ok bool, err error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return nil, false, ErrClosed
	}
	if q.err != nil {
		return nil, false, q.err
	}
	if q.n == 0 {
		return nil, false, nil
	}
	rec, err = q.popLocked(dst[:0])
	if err != nil {
		if errors.Is(err, ErrCorrupt) {
			q.err = err
		}
		return nil, false, err
	}
	return rec, true, nil
}

func (q *Queue) popLocked(dst []byte) ([]byte, error) {
	for !q.blk.loaded || q.rskip >= q.blk.count {
		if q.blk.loaded { // every record of the head block popped: on to the next
			q.roff, q.rskip = q.blk.end, 0
			q.unloadBlock()
		}
		hi := q.segIndex(q.rseq)
		if hi < 0 {
			return nil, fmt.Errorf("diskq: pop: head segment %d missing: %w", q.rseq, ErrCorrupt)
		}
		if q.roff < q.segs[hi].size {
			if err := q.loadBlockLocked(q.segs[hi].size); err != nil {
				return nil, err
			}
			continue
		}
		if q.rskip != 0 {
			return nil, q.corruptAt(fmt.Sprintf("head is record %d of a block past the end of the segment", q.rskip))
		}
		if hi == len(q.segs)-1 {
			if q.pendN == 0 {
				return nil, fmt.Errorf("diskq: pop: %d records counted but none left in %s: %w", q.n, q.segPath(q.rseq), ErrCorrupt)
			}
			return q.popOpenLocked(dst), nil
		}
		q.closeReader()
		q.rseq, q.roff = q.segs[hi+1].seq, segHeaderSize
		if err := q.deleteConsumedLocked(); err != nil {
			return nil, err
		}
	}
	rec, next := nextRecord(q.blk.raw, q.blk.p)
	dst = append(dst, rec...)
	q.blk.p = next
	q.rskip++
	q.n--
	return dst, nil
}

// popOpenLocked pops the first record of the open block, the head when
// the file holds none (see Queue).
func (q *Queue) popOpenLocked(dst []byte) []byte {
	rec, next := nextRecord(q.pend, q.pendOff)
	dst = append(dst, rec...)
	q.pendOff = next
	q.pendN--
	q.n--
	if q.pendN == 0 {
		q.pend, q.pendOff = q.pend[:0], 0
	}
	return dst
}

// loadBlockLocked reads, checks and decodes the head block, at q.roff of
// the head segment (of size bytes), and moves to its record q.rskip.
func (q *Queue) loadBlockLocked(size int64) error {
	if q.roff+blockHeader > size {
		return q.corruptAt("truncated block header")
	}
	h, err := q.readAhead(q.roff, blockHeader)
	if err != nil {
		return err
	}
	var hdr [blockHeader]byte
	copy(hdr[:], h)
	b, bad := parseBlockHeader(hdr[:])
	if bad != "" {
		return q.corruptAt(bad)
	}
	off := q.roff + blockHeader
	if off+int64(b.stored) > size {
		return q.corruptAt(fmt.Sprintf("block of %d bytes past the end of the segment", b.stored))
	}
	var data []byte
	if int(b.stored) <= len(q.rbuf) {
		if data, err = q.readAhead(off, int(b.stored)); err != nil {
			return err
		}
	} else {
		q.blk.data = append(q.blk.data[:0], make([]byte, b.stored)...)
		if _, err := q.r.ReadAt(q.blk.data, off); err != nil {
			return q.corruptAt(fmt.Sprintf("read block: %v", err))
		}
		data = q.blk.data
	}
	if !b.sumOK(hdr[:], data) {
		return q.corruptAt("checksum mismatch")
	}
	raw, bad := q.codec.decode(q.blk.dec, b, data)
	if bad != "" {
		return q.corruptAt(bad)
	}
	if b.codec == codecZstd {
		q.blk.dec = raw
	}
	if q.rskip > int64(b.count) {
		return q.corruptAt(fmt.Sprintf("head is record %d of a block of %d", q.rskip, b.count))
	}
	p := 0
	for range q.rskip {
		_, p = nextRecord(raw, p)
	}
	q.blk.loaded, q.blk.raw, q.blk.p = true, raw, p
	q.blk.count, q.blk.end = int64(b.count), off+int64(b.stored)
	return nil
}

// unloadBlock forgets the head block, and the buffers a block larger than
// the read-ahead buffer needed.
func (q *Queue) unloadBlock() {
	q.blk.loaded, q.blk.raw = false, nil
	if cap(q.blk.dec) > 4*q.opts.BufferBytes {
		q.blk.dec = nil
	}
	q.blk.data = nil
}

func (q *Queue) corruptAt(why string) error {
	return fmt.Errorf("diskq: segment %s offset %d: %s: %w", q.segPath(q.rseq), q.roff, why, ErrCorrupt)
}

// readAhead returns n bytes of the head segment at off, n <= len(q.rbuf),
// refilling the read-ahead buffer with one sequential read when needed.
func (q *Queue) readAhead(off int64, n int) ([]byte, error) {
	if q.r != nil && off >= q.rbufOff && off+int64(n) <= q.rbufOff+int64(q.rlen) {
		s := int(off - q.rbufOff)
		return q.rbuf[s : s+n], nil
	}
	if q.r == nil {
		f, err := os.Open(q.segPath(q.rseq))
		if err != nil {
			return nil, fmt.Errorf("diskq: open reader: %w", err)
		}
		q.r = f
	}
	m, err := q.r.ReadAt(q.rbuf, off)
	if m < n {
		if err == nil || errors.Is(err, io.EOF) {
			return nil, q.corruptAt("unexpected end of file")
		}
		return nil, fmt.Errorf("diskq: read %s: %w", q.segPath(q.rseq), err)
	}
	q.rbufOff, q.rlen = off, m
	return q.rbuf[:n], nil
}

func (q *Queue) closeReader() {
	if q.r != nil {
		q.r.Close()
		q.r = nil
	}
	q.rlen = 0
}

// deleteConsumedLocked removes the segments before the head that no pinned
// mark needs.
func (q *Queue) deleteConsumedLocked() error {
	floor := q.rseq
	for _, p := range q.pins {
		floor = min(floor, p.Segment)
	}
	for len(q.segs) > 1 && q.segs[0].seq < floor {
		if err := os.Remove(q.segPath(q.segs[0].seq)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("diskq: delete consumed segment: %w", err)
		}
		q.segs = q.segs[1:]
		q.dirDirty = true
	}
	return nil
}

// Len returns the number of records in the queue.
func (q *Queue) Len() int64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.n
}

// Bytes returns the size of the segment files on disk plus the bytes of
// the records in the open block (not yet compressed). Segments kept for a
// pinned mark are included.
func (q *Queue) Bytes() int64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	b := int64(len(q.pend) - q.pendOff)
	for _, s := range q.segs {
		b += s.size
	}
	return b
}

// Recovery reports what Open or OpenAt repaired.
func (q *Queue) Recovery() Recovery {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.recovery
}

// Sync seals the open block, writes it to the file and, with Options.Sync,
// fsyncs it. It also records the current head so that Open after a crash
// does not return records popped before the Sync.
func (q *Queue) Sync() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return ErrClosed
	}
	if err := q.sealLocked(); err != nil {
		return err
	}
	return q.checkpointLocked()
}

// checkpointLocked fsyncs the tail segment with Options.Sync, and records
// the head, tail and marks in queue.meta. The open block must be sealed.
func (q *Queue) checkpointLocked() error {
	if err := q.w.sync("sync"); err != nil {
		return err
	}
	return q.writeMetaLocked(false)
}

// Mark makes every pushed record durable and returns the current Position,
// to be stored in a checkpoint. The segments the mark needs are kept (and
// the mark is remembered across Close and reopen) until Release(pos) is
// called, typically once a newer checkpoint is durable.
func (q *Queue) Mark() (Position, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return Position{}, ErrClosed
	}
	if err := q.sealLocked(); err != nil {
		return Position{}, err
	}
	pos := q.positionLocked() // syncing does not move it
	q.pins = append(q.pins, pos)
	if err := q.checkpointLocked(); err != nil {
		q.pins = q.pins[:len(q.pins)-1]
		return Position{}, err
	}
	return pos, nil
}

// Release forgets the mark pos: the consumed segments only it kept are
// deleted. Releasing a position that is not pinned does nothing.
func (q *Queue) Release(pos Position) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return ErrClosed
	}
	for i, p := range q.pins {
		if p == pos {
			q.pins = append(q.pins[:i], q.pins[i+1:]...)
			return q.deleteConsumedLocked()
		}
	}
	return nil
}

// Marks returns the positions currently pinned by Mark or OpenAt.
func (q *Queue) Marks() []Position {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]Position(nil), q.pins...)
}

// Close seals the open block, syncs the queue, records its state for Open
// and closes its files. Close on a closed queue returns ErrClosed.
func (q *Queue) Close() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return ErrClosed
	}
	q.closed = true
	err := q.sealLocked()
	if err == nil {
		err = q.w.sync("sync")
	}
	if err == nil && q.err == nil {
		err = q.writeMetaLocked(true)
	}
	q.closeFiles()
	q.codec.close()
	return err
}

func (q *Queue) closeFiles() {
	q.closeReader()
	q.w.close()
}

// crashForTest abandons the queue as a crash would: the open block is
// lost and no state is recorded.
func (q *Queue) crashForTest() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	q.closeFiles()
}
