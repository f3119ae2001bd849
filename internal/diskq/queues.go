package diskq

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"sort"
	"sync"

	"github.com/petrel-crawler/petrel/internal/atomicfile"
)

const (
	queuesExt       = ".mq"
	queuesIndexName = "queues.index"

	// compactMaxRecords bounds the records moved by one compaction pass,
	// and so the memory the pass needs (about 24 bytes per record).
	compactMaxRecords = 1 << 20
)

var magicQueuesIndex = [8]byte{'p', 'e', 't', 'r', 'e', 'l', 'M', 'I'}

// mseg is one segment file of a Queues. Positions are logical: byte off of
// segment s is at position s.base+off, and positions only grow, so a
// position identifies its segment.
type mseg struct {
	seq   uint64
	base  uint64
	size  int64 // logical size, including buffered bytes for the current segment
	total int64 // records written to the segment
	live  int64 // records not yet dequeued or removed
	f     *os.File
}

// idq is the in-RAM index of one logical queue: the positions of its
// records, in FIFO order, as zigzag varint deltas (typically 3 to 5 bytes
// per record). Deltas are signed because compaction moves records forward.
type idq struct {
	buf  []byte // buf[r:] holds the deltas of the queued records
	r    int
	prev uint64 // position preceding the delta at buf[r] (0 when empty)
	last uint64 // position of the last record (0 when empty)
	n    int64
	// shared is set when a checkpoint's index snapshot refers to buf's
	// bytes: they are then never written again (copy on write), appends
	// going beyond the snapshot's end.
	shared bool
}

func zigzag(d int64) uint64   { return uint64(d<<1) ^ uint64(d>>63) }
func unzigzag(u uint64) int64 { return int64(u>>1) ^ -int64(u&1) }

func (q *idq) push(pos uint64) {
	q.buf = binary.AppendUvarint(q.buf, zigzag(int64(pos-q.last)))
	q.last = pos
	q.n++
}

// iter decodes the positions from the front; it does not modify q.
type idqIter struct {
	buf  []byte
	prev uint64
}

func (q *idq) iter() idqIter { return idqIter{buf: q.buf[q.r:], prev: q.prev} }

func (it *idqIter) next() (uint64, bool) {
	if len(it.buf) == 0 {
		return 0, false
	}
	u, k := binary.Uvarint(it.buf)
	it.buf = it.buf[k:]
	it.prev += uint64(unzigzag(u))
	return it.prev, true
}

// consume drops the k front records, whose last position is pos.
func (q *idq) consume(k int, it idqIter) {
	q.r = len(q.buf) - len(it.buf)
	q.prev = it.prev
	q.n -= int64(k)
	if q.n == 0 {
		if q.shared {
			q.buf, q.shared = nil, false
		}
		q.buf, q.r, q.prev, q.last = q.buf[:0], 0, 0, 0
		return
	}
	if q.r >= 256 && q.r >= len(q.buf)/2 {
		if q.shared {
			q.buf, q.r, q.shared = append([]byte(nil), q.buf[q.r:]...), 0, false
			return
		}
		m := copy(q.buf, q.buf[q.r:])
		q.buf = q.buf[:m]
		if cap(q.buf) > 1024 && m < cap(q.buf)/4 {
			q.buf = append([]byte(nil), q.buf...)
		}
		q.r = 0
	}
}

// Queues is a set of logical FIFO queues of byte records, one per uint64 id,
// sharing append-only segment files: the store behind the workbench
// virtualizer. Each record is appended to the current segment together with
// its id; an in-RAM index keeps, per id, the positions of its records as
// varint deltas. Segments count their live records; a segment with none is
// deleted, and segments mostly dead are compacted by copying their live
// records forward, so disk use stays proportional to live data.
//
// The index is persisted by Close. After a crash (no index), OpenQueues
// rebuilds it by scanning the segments: nothing enqueued before the crash
// and written to the file is lost, but records dequeued since their segment
// was last emptied come back (at-least-once). A Queues is safe for
// concurrent use.
type Queues struct {
	mu   sync.Mutex
	dir  string
	opts Options
	log  *slog.Logger

	segs  []*mseg // increasing seq and base; the last is the current one
	ids   map[uint64]*idq
	total int64

	w segmentWriter // on the current segment; w.f is also its read handle (mseg.f)

	scratch     []byte
	win         []byte // read window of DequeueN and compaction, BufferBytes+len(scratch)
	recovery    Recovery
	compactions int64 // compaction passes that moved records, for tests
	closed      bool
}

// OpenQueues opens the queues stored in dir, creating dir and an empty set
// if needed. After a clean Close every queue is restored exactly; after a
// crash the index is rebuilt from the segments (see Queues and Recovery).
func OpenQueues(dir string, opts Options) (*Queues, error) {
	opts = opts.withDefaults()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("diskq: open queues %s: %w", dir, err)
	}
	m := &Queues{
		dir:     dir,
		opts:    opts,
		log:     opts.Logger,
		ids:     make(map[uint64]*idq),
		w:       newSegmentWriter(dir, queuesExt, magicQueues, opts),
		scratch: make([]byte, 512),
	}
	seqs, err := listSegments(dir, queuesExt)
	if err != nil {
		return nil, err
	}
	for i, seq := range seqs {
		f, size, base, err := openSegment(dir, queuesExt, magicQueues, seq, i == len(seqs)-1, &m.recovery)
		if err != nil {
			m.closeFiles()
			return nil, err
		}
		if f == nil {
			continue // torn segment removed
		}
		m.segs = append(m.segs, &mseg{seq: seq, base: base, size: size, f: f})
	}
	loaded, err := m.loadIndex()
	if err != nil {
		m.closeFiles()
		return nil, err
	}
	if !loaded && len(m.segs) > 0 {
		if err := m.rebuild(); err != nil {
			m.closeFiles()
			return nil, err
		}
	}
	// Closed segments without live records (a crash after they emptied)
	// are deleted now.
	for len(m.segs) > 1 && m.segs[0].live == 0 {
		if err := m.deleteSegment(m.segs[0]); err != nil {
			m.closeFiles()
			return nil, err
		}
		m.segs = m.segs[1:]
	}
	if len(m.segs) == 0 {
		if err := m.newSegment(1, 0); err != nil {
			m.closeFiles()
			return nil, err
		}
	} else {
		cur := m.cur()
		if err := m.w.open(cur.seq, cur.size); err != nil {
			m.closeFiles()
			return nil, err
		}
		cur.f.Close()
		cur.f = m.w.f // the writer doubles as the read handle
	}
	// From here on the index on disk is stale: remove it so that a crash
	// leads to a rebuild instead of a wrong index.
	if err := os.Remove(filepath.Join(dir, queuesIndexName)); err != nil && !errors.Is(err, os.ErrNotExist) {
		m.closeFiles()
		return nil, fmt.Errorf("diskq: open queues: %w", err)
	}
	if opts.Sync {
		if err := syncDir(dir, opts.fsyncFile); err != nil {
			m.closeFiles()
			return nil, err
		}
	}
	if m.recovery.CutBytes > 0 {
		m.log.Warn("diskq: torn tail cut", "dir", dir, "segment", m.recovery.CutSegment, "offset", m.recovery.CutOffset, "bytes", m.recovery.CutBytes)
	}
	if m.recovery.Rebuilt {
		m.log.Warn("diskq: queues were not closed cleanly; index rebuilt from segments", "dir", dir, "records", m.recovery.Records)
	}
	return m, nil
}

func (m *Queues) segPath(seq uint64) string { return filepath.Join(m.dir, segName(seq, queuesExt)) }

func (m *Queues) cur() *mseg { return m.segs[len(m.segs)-1] }

func (m *Queues) newSegment(seq, base uint64) error {
	if err := m.w.start(seq, base); err != nil {
		return err
	}
	m.segs = append(m.segs, &mseg{seq: seq, base: base, size: segHeaderSize, f: m.w.f})
	return nil
}

// segFor returns the segment holding position pos.
func (m *Queues) segFor(pos uint64) *mseg {
	i := sort.Search(len(m.segs), func(i int) bool { return m.segs[i].base > pos }) - 1
	if i < 0 {
		return nil
	}
	s := m.segs[i]
	if pos-s.base >= uint64(s.size) {
		return nil
	}
	return s
}

// rebuild reconstructs the index from the segments after a crash.
func (m *Queues) rebuild() error {
	m.recovery.Dirty, m.recovery.Rebuilt = true, true
	for i, s := range m.segs {
		end := scanRecords(s.f, segHeaderSize, s.size, mRecHeader, m.opts.BufferBytes, func(off int64, hdr []byte) {
			m.idqFor(binary.LittleEndian.Uint64(hdr)).push(s.base + uint64(off))
			s.total++
			s.live++
			m.total++
		})
		if end == s.size {
			continue
		}
		if err := cutTornTail(m.segPath(s.seq), s.seq, end, s.size, i == len(m.segs)-1, &m.recovery); err != nil {
			return err
		}
		s.size = end
	}
	m.recovery.Records = m.total
	return nil
}

func (m *Queues) idqFor(id uint64) *idq {
	q := m.ids[id]
	if q == nil {
		q = &idq{}
		m.ids[id] = q
	}
	return q
}

// Enqueue appends rec to the logical queue id.
func (m *Queues) Enqueue(id uint64, rec []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	if len(rec) > MaxRecordBytes {
		return fmt.Errorf("diskq: enqueue %d bytes: %w", len(rec), ErrTooLarge)
	}
	pos, err := m.appendLocked(id, rec)
	if err != nil {
		return err
	}
	m.idqFor(id).push(pos)
	m.total++
	return nil
}

// appendLocked writes one record to the current segment and returns its
// position; it updates the segment counts but not the index.
func (m *Queues) appendLocked(id uint64, rec []byte) (uint64, error) {
	sz := int64(mRecHeader + len(rec))
	if m.w.full(m.cur().size, sz) {
		if err := m.rollLocked(); err != nil {
			return 0, err
		}
	}
	var hdr [mRecHeader]byte
	binary.LittleEndian.PutUint64(hdr[:8], id)
	frameRecord(hdr[:], rec)
	c := m.cur()
	pos := c.base + uint64(c.size)
	if err := m.w.append(hdr[:], rec, "enqueue"); err != nil {
		return 0, err
	}
	c.size += sz
	c.total++
	c.live++
	return pos, nil
}

// rollLocked seals the current segment, deletes it if it holds no live
// record, and starts the next one.
func (m *Queues) rollLocked() error {
	if err := m.w.sync("roll"); err != nil {
		return err
	}
	c := m.cur()
	// The writer handle stays open as the read handle of the segment.
	m.w.f = nil
	if c.live == 0 {
		m.segs = m.segs[:len(m.segs)-1]
		if err := m.deleteSegment(c); err != nil {
			return err
		}
	}
	return m.newSegment(c.seq+1, c.base+uint64(c.size))
}

// readLocked reads the record of id at pos, appending its data to dst.
func (m *Queues) readLocked(id, pos uint64, dst []byte) ([]byte, error) {
	s := m.segFor(pos)
	if s == nil {
		return nil, fmt.Errorf("diskq: queue %d: position %d in no segment: %w", id, pos, ErrCorrupt)
	}
	off := int64(pos - s.base)
	if s == m.cur() {
		if b, ok := m.w.buffered(off); ok {
			return m.parseRecord(s, off, id, b, dst, true)
		}
	}
	n := min(int64(len(m.scratch)), s.size-off)
	got, err := s.f.ReadAt(m.scratch[:n], off)
	if int64(got) < min(n, mRecHeader) {
		return nil, fmt.Errorf("diskq: segment %s offset %d: short read (%v): %w", m.segPath(s.seq), off, err, ErrCorrupt)
	}
	return m.parseRecord(s, off, id, m.scratch[:got], dst, false)
}

// parseRecord checks and decodes the record at offset off of segment s,
// whose first bytes are in b; if b is short and complete is false, the rest
// is read from the file.
func (m *Queues) parseRecord(s *mseg, off int64, id uint64, b, dst []byte, complete bool) ([]byte, error) {
	bad := func(why string) error {
		return fmt.Errorf("diskq: segment %s offset %d: %s: %w", m.segPath(s.seq), off, why, ErrCorrupt)
	}
	if len(b) < mRecHeader {
		return nil, bad("truncated header")
	}
	rid := binary.LittleEndian.Uint64(b[:8])
	l := binary.LittleEndian.Uint32(b[8:12])
	sum := binary.LittleEndian.Uint32(b[12:16])
	if rid != id {
		return nil, bad(fmt.Sprintf("record of queue %d where queue %d expected", rid, id))
	}
	if l > MaxRecordBytes || off+mRecHeader+int64(l) > s.size {
		return nil, bad(fmt.Sprintf("bad record length %d", l))
	}
	start := len(dst)
	if have := len(b) - mRecHeader; have >= int(l) {
		dst = append(dst, b[mRecHeader:mRecHeader+int(l)]...)
	} else {
		if complete {
			return nil, bad("truncated record")
		}
		dst = append(dst, b[mRecHeader:]...)
		dst = append(dst, make([]byte, int(l)-have)...)
		if _, err := s.f.ReadAt(dst[start+have:], off+mRecHeader+int64(have)); err != nil {
			return nil, bad(fmt.Sprintf("read: %v", err))
		}
	}
	if crcOf(b[:12], dst[start:]) != sum {
		return nil, bad("checksum mismatch")
	}
	return dst, nil
}

// Dequeue removes the record at the head of queue id and returns it
// appended to dst[:0]; ok is false if the queue is empty. Reading the record
// may cost one random read; DequeueN amortizes it.
func (m *Queues) Dequeue(id uint64, dst []byte) (rec []byte, ok bool, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, false, ErrClosed
	}
	q := m.ids[id]
	if q == nil {
		return nil, false, nil
	}
	it := q.iter()
	pos, _ := it.next()
	rec, err = m.readLocked(id, pos, dst[:0])
	if err != nil {
		return nil, false, err
	}
	if err := m.consumeLocked(id, q, 1, it, []uint64{pos}); err != nil {
		return rec, true, err
	}
	return rec, true, nil
}

// DequeueN removes up to n records from the head of queue id and returns
// them in FIFO order, all slices of one new buffer. Records that lie close
// together in a segment are fetched with one read, so draining a queue that
// was filled in bursts costs mostly sequential I/O.
func (m *Queues) DequeueN(id uint64, n int) ([][]byte, error) {
	return m.readN(id, n, true)
}

// Peek returns every record of queue id in FIFO order without removing
// them (for snapshots), all slices of one new buffer.
func (m *Queues) Peek(id uint64) ([][]byte, error) {
	return m.readN(id, math.MaxInt, false)
}

// readN reads up to n records from the head of queue id, removing them when
// consume is set.
func (m *Queues) readN(id uint64, n int, consume bool) ([][]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, ErrClosed
	}
	q := m.ids[id]
	if q == nil || n <= 0 {
		return nil, nil
	}
	n = int(min(int64(n), q.n))
	it := q.iter()
	pos := make([]uint64, n)
	for i := range pos {
		pos[i], _ = it.next()
	}
	var (
		out     = make([][]byte, 0, n)
		ends    = make([]int, 0, n)
		buf     []byte
		win     []byte // m.window(); win[:winLen] holds bytes [winOff, winOff+winLen) of winSeg
		winLen  int
		winSeg  *mseg
		winOff  int64
		maxSpan = int64(m.opts.BufferBytes)
		peek    = int64(len(m.scratch))
	)
	for i, p := range pos {
		s := m.segFor(p)
		if s == nil {
			return nil, fmt.Errorf("diskq: queue %d: position %d in no segment: %w", id, p, ErrCorrupt)
		}
		off := int64(p - s.base)
		if s == m.cur() {
			if b, ok := m.w.buffered(off); ok {
				var err error
				if buf, err = m.parseRecord(s, off, id, b, buf, true); err != nil {
					return nil, err
				}
				ends = append(ends, len(buf))
				continue
			}
		}
		if s != winSeg || off < winOff || off+mRecHeader > winOff+int64(winLen) {
			// Read one span covering this record and the following ones
			// of this segment that lie within maxSpan of it.
			end := off + peek
			for _, q := range pos[i+1:] {
				if q < p || q-s.base >= uint64(s.size) || int64(q-p)+peek > maxSpan {
					break
				}
				end = off + int64(q-p) + peek
			}
			limit := s.size
			if s == m.cur() {
				limit = m.w.flushed
			}
			end = min(end, limit)
			if win == nil {
				win = m.window()
			}
			got, err := s.f.ReadAt(win[:end-off], off)
			if got < mRecHeader {
				return nil, fmt.Errorf("diskq: segment %s offset %d: short read (%v): %w", m.segPath(s.seq), off, err, ErrCorrupt)
			}
			winSeg, winOff, winLen = s, off, got
		}
		var err error
		if buf, err = m.parseRecord(s, off, id, win[off-winOff:winLen], buf, false); err != nil {
			return nil, err
		}
		ends = append(ends, len(buf))
	}
	start := 0
	for _, e := range ends {
		out = append(out, buf[start:e:e])
		start = e
	}
	if !consume {
		return out, nil
	}
	if err := m.consumeLocked(id, q, n, it, pos); err != nil {
		return out, err
	}
	return out, nil
}

// window returns the read window, allocating it on first use.
func (m *Queues) window() []byte {
	if m.win == nil {
		m.win = make([]byte, m.opts.BufferBytes+len(m.scratch))
	}
	return m.win
}

// consumeLocked drops the k front records of q, at positions pos, updates
// the segment counts and reclaims disk space.
func (m *Queues) consumeLocked(id uint64, q *idq, k int, it idqIter, pos []uint64) error {
	q.consume(k, it)
	if q.n == 0 {
		delete(m.ids, id)
	}
	m.total -= int64(k)
	return m.releaseLocked(pos)
}

// releaseLocked decrements the live counts of the segments holding pos,
// deletes emptied segments and compacts when too much of the disk is dead.
func (m *Queues) releaseLocked(pos []uint64) error {
	var emptied bool
	for _, p := range pos {
		if s := m.segFor(p); s != nil {
			s.live--
			emptied = emptied || (s.live == 0 && s != m.cur())
		}
	}
	if emptied {
		cur := m.cur()
		if err := m.deleteSegments(func(s *mseg) bool { return s.live == 0 && s != cur }); err != nil {
			return err
		}
	}
	if m.total == 0 && m.cur().size > segHeaderSize+int64(m.opts.BufferBytes) {
		// Everything was consumed: start a fresh segment so that the dead
		// current one is deleted.
		m.w.discard() // only dead records
		return m.rollLocked()
	}
	return m.maybeCompactLocked()
}

func (m *Queues) deleteSegment(s *mseg) error {
	if s.f != nil {
		s.f.Close()
		s.f = nil
	}
	if err := os.Remove(m.segPath(s.seq)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("diskq: delete segment: %w", err)
	}
	return nil
}

// deleteSegments deletes the segments for which dead is true and drops them
// from m.segs. It tries them all and returns the first error.
func (m *Queues) deleteSegments(dead func(*mseg) bool) error {
	kept := m.segs[:0]
	var err error
	for _, s := range m.segs {
		if dead(s) {
			if e := m.deleteSegment(s); e != nil && err == nil {
				err = e
			}
			continue
		}
		kept = append(kept, s)
	}
	clear(m.segs[len(kept):])
	m.segs = kept
	return err
}

// deadLive estimates the bytes of dead records in the closed segments, and
// the live ones, assuming records of equal size within a segment.
func (m *Queues) deadLive() (dead, live int64) {
	for _, s := range m.segs[:len(m.segs)-1] {
		if s.total == 0 {
			continue
		}
		l := (s.size - segHeaderSize) * s.live / s.total
		live += l
		dead += s.size - segHeaderSize - l
	}
	return dead, live
}

func (m *Queues) maybeCompactLocked() error {
	dead, live := m.deadLive()
	if dead <= live || dead < m.opts.SegmentBytes {
		return nil
	}
	return m.compactLocked()
}

// Compact copies the live records of the closed segments that are at most
// half live to the current segment, in order, and deletes those segments.
// It runs automatically when the dead bytes exceed both the live bytes and
// one segment; calling it directly forces a pass.
func (m *Queues) Compact() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	return m.compactLocked()
}

type moveEnt struct {
	old, new uint64
	id       uint64
}

func (m *Queues) compactLocked() error {
	var victims []*mseg
	var moving int64
	for _, s := range m.segs[:len(m.segs)-1] {
		if s.live*2 <= s.total && (len(victims) == 0 || moving+s.live <= compactMaxRecords) {
			victims = append(victims, s)
			moving += s.live
		}
	}
	if len(victims) == 0 {
		return nil
	}
	isVictim := make(map[*mseg]bool, len(victims))
	for _, s := range victims {
		isVictim[s] = true
	}
	// One pass over the index finds the live records in the victims.
	ents := make([]moveEnt, 0, moving)
	for id, q := range m.ids {
		it := q.iter()
		for p, ok := it.next(); ok; p, ok = it.next() {
			if s := m.segFor(p); s != nil && isVictim[s] {
				ents = append(ents, moveEnt{old: p, id: id})
			}
		}
	}
	sort.Slice(ents, func(i, j int) bool { return ents[i].old < ents[j].old })
	// Copy them forward in position order: sequential reads of each victim.
	var (
		win    = m.window()
		winSeg *mseg
		winOff int64
		winLen int
		data   []byte
	)
	for i := range ents {
		e := &ents[i]
		s := m.segFor(e.old)
		off := int64(e.old - s.base)
		if s != winSeg || off < winOff || off+mRecHeader > winOff+int64(winLen) ||
			off+mRecHeader+int64(binary.LittleEndian.Uint32(win[off-winOff+8:])) > winOff+int64(winLen) {
			got, err := s.f.ReadAt(win, off)
			if got < mRecHeader {
				return fmt.Errorf("diskq: compact: segment %s offset %d: short read (%v): %w", m.segPath(s.seq), off, err, ErrCorrupt)
			}
			winSeg, winOff, winLen = s, off, got
		}
		var err error
		data, err = m.parseRecord(s, off, e.id, win[off-winOff:winLen], data[:0], false)
		if err != nil {
			return fmt.Errorf("diskq: compact: %w", err)
		}
		if e.new, err = m.appendLocked(e.id, data); err != nil {
			return fmt.Errorf("diskq: compact: %w", err)
		}
		s.live--
	}
	m.compactions++
	// Rewrite the index of every queue that had records moved.
	moved := make(map[uint64]bool)
	for _, e := range ents {
		moved[e.id] = true
	}
	for id := range moved {
		q := m.ids[id]
		nq := &idq{buf: make([]byte, 0, len(q.buf)-q.r+8)}
		it := q.iter()
		for p, ok := it.next(); ok; p, ok = it.next() {
			if s := m.segFor(p); s != nil && isVictim[s] {
				j := sort.Search(len(ents), func(j int) bool { return ents[j].old >= p })
				p = ents[j].new
			}
			nq.push(p)
		}
		m.ids[id] = nq
	}
	return m.deleteSegments(func(s *mseg) bool { return isVictim[s] })
}

// Count returns the number of records in queue id.
func (m *Queues) Count(id uint64) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if q := m.ids[id]; q != nil {
		return q.n
	}
	return 0
}

// Total returns the number of records in all queues.
func (m *Queues) Total() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.total
}

// Len returns the number of non-empty queues.
func (m *Queues) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.ids)
}

// DiskBytes returns the size of the segment files, including bytes still
// in the write buffer.
func (m *Queues) DiskBytes() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	var b int64
	for _, s := range m.segs {
		b += s.size
	}
	return b
}

// IndexBytes returns the bytes of RAM held by the index of the queued
// records (the varint position lists, capacity included), without the
// fixed per-queue overhead (about 100 bytes per non-empty queue).
func (m *Queues) IndexBytes() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	var b int64
	for _, q := range m.ids {
		b += int64(cap(q.buf))
	}
	return b
}

// Recovery reports what OpenQueues repaired.
func (m *Queues) Recovery() Recovery {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.recovery
}

// Remove purges queue id and returns how many records it held. Its records
// become dead space, reclaimed as for dequeued records.
func (m *Queues) Remove(id uint64) (dropped int64, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return 0, ErrClosed
	}
	q := m.ids[id]
	if q == nil {
		return 0, nil
	}
	pos := make([]uint64, 0, q.n)
	it := q.iter()
	for p, ok := it.next(); ok; p, ok = it.next() {
		pos = append(pos, p)
	}
	delete(m.ids, id)
	m.total -= q.n
	return q.n, m.releaseLocked(pos)
}

// Sync writes the buffered records to the current segment and, with
// Options.Sync, fsyncs it. Synced records survive a crash (see Queues).
func (m *Queues) Sync() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	return m.w.sync("sync")
}

// Close flushes the segments, persists the index so that OpenQueues
// restores every queue, and closes the files.
func (m *Queues) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	m.closed = true
	err := m.w.sync("sync")
	if err == nil {
		err = m.writeIndex()
	}
	m.closeFiles()
	return err
}

func (m *Queues) closeFiles() {
	for _, s := range m.segs {
		if s.f != nil {
			s.f.Close()
			s.f = nil
		}
	}
	m.w.f = nil // closed above, as the current segment's f
}

// crashForTest abandons the queues as a crash would.
func (m *Queues) crashForTest() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	m.closeFiles()
}

// Index file "queues.index", written by Close and removed by OpenQueues:
//
//	magic "petrelMI" | version uint32 | nsegs uint32
//	| nsegs × (seq u64, base u64, size i64, total i64, live i64)
//	| nids u64 | nids × (id u64, n i64, prev u64, last u64, len u32, len bytes of deltas)
//	| crc uint32 over everything before it
func (m *Queues) writeIndex() error {
	x := m.snapIndexLocked(m.segs, false)
	return atomicfile.Write(filepath.Join(m.dir, queuesIndexName),
		atomicfile.Options{Sync: m.opts.Sync, SyncDir: m.opts.Sync, Fsync: m.opts.fsyncFile, Buffer: 1 << 20}, x.writeTo)
}

// indexSnap is the index of the queues at one moment, to be written.
type indexSnap struct {
	segs []mseg
	ids  []idSnap
}

type idSnap struct {
	id, prev, last uint64
	n              int64
	deltas         []byte
}

// snapIndexLocked takes the index over the segments segs. With share the
// deltas are not copied but shared with the queues (copy on write, see
// idq.shared), so that the snapshot costs O(queues), not O(records).
func (m *Queues) snapIndexLocked(segs []*mseg, share bool) indexSnap {
	x := indexSnap{segs: make([]mseg, len(segs)), ids: make([]idSnap, 0, len(m.ids))}
	for i, s := range segs {
		x.segs[i] = mseg{seq: s.seq, base: s.base, size: s.size, total: s.total, live: s.live}
	}
	for id, q := range m.ids {
		d := q.buf[q.r:len(q.buf):len(q.buf)]
		if share {
			q.shared = true
		} else {
			d = append([]byte(nil), d...)
		}
		x.ids = append(x.ids, idSnap{id: id, prev: q.prev, last: q.last, n: q.n, deltas: d})
	}
	return x
}

// writeTo writes the index file to w.
func (x indexSnap) writeTo(w io.Writer) error {
	h := crc32.New(castagnoli)
	mw := io.MultiWriter(w, h)
	b := make([]byte, 0, 64)
	put := func(b []byte) error { _, err := mw.Write(b); return err }
	b = append(b, magicQueuesIndex[:]...)
	b = binary.LittleEndian.AppendUint32(b, queuesFormat)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(x.segs)))
	if err := put(b); err != nil {
		return err
	}
	for _, s := range x.segs {
		b = binary.LittleEndian.AppendUint64(b[:0], s.seq)
		b = binary.LittleEndian.AppendUint64(b, s.base)
		b = binary.LittleEndian.AppendUint64(b, uint64(s.size))
		b = binary.LittleEndian.AppendUint64(b, uint64(s.total))
		b = binary.LittleEndian.AppendUint64(b, uint64(s.live))
		if err := put(b); err != nil {
			return err
		}
	}
	if err := put(binary.LittleEndian.AppendUint64(b[:0], uint64(len(x.ids)))); err != nil {
		return err
	}
	for _, q := range x.ids {
		b = binary.LittleEndian.AppendUint64(b[:0], q.id)
		b = binary.LittleEndian.AppendUint64(b, uint64(q.n))
		b = binary.LittleEndian.AppendUint64(b, q.prev)
		b = binary.LittleEndian.AppendUint64(b, q.last)
		b = binary.LittleEndian.AppendUint32(b, uint32(len(q.deltas)))
		if err := put(b); err != nil {
			return err
		}
		if err := put(q.deltas); err != nil {
			return err
		}
	}
	_, err := w.Write(binary.LittleEndian.AppendUint32(b[:0], h.Sum32()))
	return err
}

// loadIndex restores the index written by Close. It reports false if there
// is none. An index that does not match the segment files is an error.
func (m *Queues) loadIndex() (bool, error) {
	path := filepath.Join(m.dir, queuesIndexName)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("diskq: read index: %w", err)
	}
	bad := func(why string) (bool, error) {
		return false, fmt.Errorf("diskq: index %s: %s: %w", path, why, ErrCorrupt)
	}
	if len(b) < 28 || [8]byte(b[:8]) != magicQueuesIndex {
		return bad("bad magic or too short")
	}
	if crcOf(b[:len(b)-4]) != binary.LittleEndian.Uint32(b[len(b)-4:]) {
		return bad("checksum mismatch")
	}
	if v := binary.LittleEndian.Uint32(b[8:]); v != queuesFormat {
		return bad(fmt.Sprintf("unsupported version %d", v))
	}
	ns := int(binary.LittleEndian.Uint32(b[12:]))
	p := b[16 : len(b)-4]
	if len(p) < 40*ns+8 {
		return bad("truncated segment table")
	}
	if ns != len(m.segs) {
		return bad(fmt.Sprintf("lists %d segments, directory has %d", ns, len(m.segs)))
	}
	for i := 0; i < ns; i++ {
		s := m.segs[i]
		seq := binary.LittleEndian.Uint64(p)
		base := binary.LittleEndian.Uint64(p[8:])
		size := int64(binary.LittleEndian.Uint64(p[16:]))
		if seq != s.seq || base != s.base || size > s.size {
			return bad(fmt.Sprintf("segment %d does not match its file", seq))
		}
		if size < s.size {
			// Bytes written after the index: cannot happen after Close.
			return bad(fmt.Sprintf("segment %d longer than recorded", seq))
		}
		s.total = int64(binary.LittleEndian.Uint64(p[24:]))
		s.live = int64(binary.LittleEndian.Uint64(p[32:]))
		p = p[40:]
	}
	nids := binary.LittleEndian.Uint64(p)
	p = p[8:]
	for i := uint64(0); i < nids; i++ {
		if len(p) < 36 {
			return bad("truncated queue table")
		}
		id := binary.LittleEndian.Uint64(p)
		q := &idq{
			n:    int64(binary.LittleEndian.Uint64(p[8:])),
			prev: binary.LittleEndian.Uint64(p[16:]),
			last: binary.LittleEndian.Uint64(p[24:]),
		}
		l := int(binary.LittleEndian.Uint32(p[32:]))
		p = p[36:]
		if len(p) < l {
			return bad("truncated queue table")
		}
		q.buf = append([]byte(nil), p[:l]...)
		p = p[l:]
		m.ids[id] = q
		m.total += q.n
	}
	if len(p) != 0 {
		return bad("trailing bytes")
	}
	return true, nil
}

// snapshotWindow bounds the record positions Snapshot holds at once.
const snapshotWindow = 1 << 20

// Snapshot calls fn for every record of every queue, without removing any,
// reading the segment files sequentially: live positions are gathered a
// window of segments at a time (at most about snapshotWindow records, 16
// bytes each), sorted, and read in file order through a read-ahead buffer.
// This makes a snapshot of records scattered over many queues cost
// sequential I/O instead of one random read per record. Records come in
// file order: FIFO within a queue, except that records moved by compaction
// may come after later records of their queue. fn's rec is only valid
// during the call. The queues' lock is held throughout.
func (m *Queues) Snapshot(fn func(id uint64, rec []byte) error) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	if err := m.w.flush(); err != nil {
		return err
	}
	return m.snapshotLocked(fn)
}

func (m *Queues) snapshotLocked(fn func(id uint64, rec []byte) error) error {
	type ent struct{ pos, id uint64 }
	var ents []ent
	var rec []byte
	hdr := make([]byte, mRecHeader)
	for first := 0; first < len(m.segs); {
		last, live := first, int64(0)
		for last < len(m.segs) && (last == first || live+m.segs[last].live <= snapshotWindow) {
			live += m.segs[last].live
			last++
		}
		lo := m.segs[first].base
		hi := uint64(math.MaxUint64)
		if last < len(m.segs) {
			hi = m.segs[last].base
		}
		ents = ents[:0]
		for id, q := range m.ids {
			it := q.iter()
			for {
				p, ok := it.next()
				if !ok {
					break
				}
				if p >= lo && p < hi {
					ents = append(ents, ent{p, id})
				}
			}
		}
		sort.Slice(ents, func(i, j int) bool { return ents[i].pos < ents[j].pos })
		var s *mseg
		var br *bufio.Reader
		var at int64
		for _, e := range ents {
			if s == nil || e.pos >= s.base+uint64(s.size) {
				s = m.segFor(e.pos)
				if s == nil {
					return fmt.Errorf("diskq: snapshot: position %d in no segment: %w", e.pos, ErrCorrupt)
				}
				br = bufio.NewReaderSize(io.NewSectionReader(s.f, 0, s.size), max(m.opts.BufferBytes, 64<<10))
				at = 0
			}
			off := int64(e.pos - s.base)
			if _, err := br.Discard(int(off - at)); err != nil {
				return fmt.Errorf("diskq: snapshot: segment %s: %w", m.segPath(s.seq), err)
			}
			if _, err := io.ReadFull(br, hdr); err != nil {
				return fmt.Errorf("diskq: snapshot: segment %s offset %d: %w", m.segPath(s.seq), off, err)
			}
			l := binary.LittleEndian.Uint32(hdr[8:12])
			if binary.LittleEndian.Uint64(hdr[:8]) != e.id || l > MaxRecordBytes || off+mRecHeader+int64(l) > s.size {
				return fmt.Errorf("diskq: snapshot: segment %s offset %d: bad record header: %w", m.segPath(s.seq), off, ErrCorrupt)
			}
			rec = append(rec[:0], make([]byte, l)...)
			if _, err := io.ReadFull(br, rec); err != nil {
				return fmt.Errorf("diskq: snapshot: segment %s offset %d: %w", m.segPath(s.seq), off, err)
			}
			if crcOf(hdr[:12], rec) != binary.LittleEndian.Uint32(hdr[12:16]) {
				return fmt.Errorf("diskq: snapshot: segment %s offset %d: checksum mismatch: %w", m.segPath(s.seq), off, ErrCorrupt)
			}
			at = off + mRecHeader + int64(l)
			if err := fn(e.id, rec); err != nil {
				return err
			}
		}
		first = last
	}
	return nil
}
