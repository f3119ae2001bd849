package diskq

import (
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
	n    int64  // records on disk (their positions in buf)
	// open holds the records enqueued since the last seal, in RAM, framed
	// as in a block (uvarint length, bytes): open[openR:] are the openN
	// still queued. They come after every record on disk.
	open  []byte
	openR int
	openN int
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
// virtualizer. Records are held in RAM per id until they fill the write
// buffer, then sealed, the records of each id together, into compressed
// blocks appended to the current segment (queues_blocks.go); an in-RAM
// index keeps, per id, the positions of its records as varint deltas.
// Segments count their live records; a segment with none is deleted, and
// segments mostly dead are compacted by copying their live records forward,
// so disk use stays proportional to live data.
//
// The index is persisted by Close. After a crash (no index), OpenQueues
// rebuilds it by scanning the segments: nothing sealed before the crash is
// lost, but records dequeued since their segment was last emptied come
// back (at-least-once), and records not yet sealed are lost (Sync seals
// them). A Queues is safe for concurrent use.
type Queues struct {
	mu   sync.Mutex
	dir  string
	opts Options
	log  *slog.Logger

	segs  []*mseg // increasing seq and base; the last is the current one
	ids   map[uint64]*idq
	total int64

	w segmentWriter // on the current segment; w.f is also its read handle (mseg.f)

	codec       *blockCodec
	openIDs     []uint64 // ids with records in RAM (idq.open), in the order they got their first
	openBytes   int      // raw bytes of the records in RAM
	bw          blockWriter
	rd          []byte       // read buffer of readBlock
	blk         decodedBlock // the block last decoded by a read
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
		dir:  dir,
		opts: opts,
		log:  opts.Logger,
		ids:  make(map[uint64]*idq),
		w:    newSegmentWriter(dir, queuesExt, magicQueues, opts),
	}
	seqs, err := listSegments(dir, queuesExt)
	if err != nil {
		return nil, err
	}
	if m.codec, err = newBlockCodec(); err != nil {
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
	pos = posBlock(pos)
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
	var b decodedBlock
	for i, s := range m.segs {
		var err error
		end := scanBlocks(s.f, segHeaderSize, s.size, m.opts.BufferBytes, func(off int64, _ blockHead) {
			if err != nil {
				return
			}
			if err = m.readBlock(s, off, &b); err != nil {
				return
			}
			for k := range b.recs {
				id, _, _ := b.record(k)
				m.idqFor(id).push(blockPos(s.base+uint64(off), k))
			}
			s.total += int64(len(b.recs))
			s.live += int64(len(b.recs))
			m.total += int64(len(b.recs))
		})
		if err != nil {
			return err
		}
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

// Enqueue appends rec to the logical queue id. The record is kept in RAM
// until the records held reach Options.BufferBytes, then sealed with the
// others into compressed blocks (see Sync for durability).
func (m *Queues) Enqueue(id uint64, rec []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	if len(rec) > MaxRecordBytes-binary.MaxVarintLen64 {
		return fmt.Errorf("diskq: enqueue %d bytes: %w", len(rec), ErrTooLarge)
	}
	q := m.idqFor(id)
	if q.openN == 0 {
		m.openIDs = append(m.openIDs, id)
	}
	before := len(q.open)
	q.open = appendRecord(q.open, rec)
	q.openN++
	m.openBytes += len(q.open) - before
	m.total++
	if m.openBytes >= m.opts.BufferBytes {
		return m.sealLocked()
	}
	return nil
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

// Dequeue removes the record at the head of queue id and returns it
// appended to dst[:0]; ok is false if the queue is empty. Reading the record
// may cost one random read and the decoding of its block; DequeueN
// amortizes them.
func (m *Queues) Dequeue(id uint64, dst []byte) (rec []byte, ok bool, err error) {
	recs, err := m.readN(id, 1, true)
	if err != nil || len(recs) == 0 {
		return nil, false, err
	}
	return append(dst[:0], recs[0]...), true, nil
}

// DequeueN removes up to n records from the head of queue id and returns
// them in FIFO order, all slices of one new buffer. Records of one id
// sealed together lie in the same blocks, so each block read and decoded
// yields several of them.
func (m *Queues) DequeueN(id uint64, n int) ([][]byte, error) {
	return m.readN(id, n, true)
}

// Peek returns every record of queue id in FIFO order without removing
// them (for snapshots), all slices of one new buffer.
func (m *Queues) Peek(id uint64) ([][]byte, error) {
	return m.readN(id, math.MaxInt, false)
}

// readN reads up to n records from the head of queue id, removing them when
// consume is set: first those on disk, then those still in RAM.
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
	nd := int(min(int64(n), q.n))
	no := min(n-nd, q.openN)
	it := q.iter()
	pos := make([]uint64, nd)
	for i := range pos {
		pos[i], _ = it.next()
	}
	var (
		ends = make([]int, 0, nd+no)
		buf  []byte
	)
	for _, p := range pos {
		data, err := m.recordAt(id, p, &m.blk)
		if err != nil {
			return nil, err
		}
		buf = append(buf, data...)
		ends = append(ends, len(buf))
	}
	r := q.openR
	for range no {
		var rec []byte
		rec, r = nextRecord(q.open, r)
		buf = append(buf, rec...)
		ends = append(ends, len(buf))
	}
	out := make([][]byte, 0, len(ends))
	start := 0
	for _, e := range ends {
		out = append(out, buf[start:e:e])
		start = e
	}
	if !consume {
		return out, nil
	}
	if no > 0 {
		m.openBytes -= r - q.openR
		q.openR, q.openN = r, q.openN-no
		if q.openN == 0 {
			q.open, q.openR = nil, 0
		}
		m.total -= int64(no)
	}
	if nd == 0 {
		if q.n == 0 && q.openN == 0 {
			delete(m.ids, id)
		}
		return out, nil
	}
	if err := m.consumeLocked(id, q, nd, it, pos); err != nil {
		return out, err
	}
	return out, nil
}

// consumeLocked drops the k front records of q on disk, at positions pos,
// updates the segment counts and reclaims disk space.
func (m *Queues) consumeLocked(id uint64, q *idq, k int, it idqIter, pos []uint64) error {
	q.consume(k, it)
	if q.n == 0 && q.openN == 0 {
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
	// Copy them forward in position order, block by block: each victim
	// block is read and decoded once. The copies go to new blocks at the
	// end of the current segment, before the records in RAM.
	var (
		b    decodedBlock
		bw   blockWriter
		from int // ents[from:i] are in bw
	)
	placed := func(k int, _, pos uint64) { ents[from+k].new = pos }
	for i := range ents {
		e := &ents[i]
		data, err := m.recordAt(e.id, e.old, &b)
		if err != nil {
			return fmt.Errorf("diskq: compact: %w", err)
		}
		bw.add(e.id, data)
		if bw.full() {
			if err := m.writeBlockLocked(&bw, placed); err != nil {
				return fmt.Errorf("diskq: compact: %w", err)
			}
			from = i + 1
		}
	}
	if err := m.writeBlockLocked(&bw, placed); err != nil {
		return fmt.Errorf("diskq: compact: %w", err)
	}
	for _, s := range victims {
		s.live = 0
	}
	m.compactions++
	// Rewrite the index of every queue that had records moved.
	moved := make(map[uint64]bool)
	for _, e := range ents {
		moved[e.id] = true
	}
	for id := range moved {
		q := m.ids[id]
		nq := &idq{buf: make([]byte, 0, len(q.buf)-q.r+8), open: q.open, openR: q.openR, openN: q.openN}
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
		return q.n + int64(q.openN)
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

// DiskBytes returns the size of the segment files. Records still in RAM
// (see Enqueue) are not counted.
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
// records (the varint position lists, capacity included) and by the
// records not yet sealed, without the fixed per-queue overhead (about 100
// bytes per non-empty queue).
func (m *Queues) IndexBytes() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	var b int64
	for _, q := range m.ids {
		b += int64(cap(q.buf) + cap(q.open))
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
// on disk become dead space, reclaimed as for dequeued records.
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
	dropped = q.n + int64(q.openN)
	m.openBytes -= len(q.open) - q.openR
	m.total -= dropped
	return dropped, m.releaseLocked(pos)
}

// Sync seals the records held in RAM into blocks of the current segment
// and, with Options.Sync, fsyncs it. Synced records survive a crash (see
// Queues).
func (m *Queues) Sync() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	if err := m.sealLocked(); err != nil {
		return err
	}
	return m.w.sync("sync")
}

// Close seals the records held in RAM, persists the index so that
// OpenQueues restores every queue, and closes the files.
func (m *Queues) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	m.closed = true
	err := m.sealLocked()
	if err == nil {
		err = m.w.sync("sync")
	}
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
	if m.codec != nil {
		m.codec.close()
		m.codec = nil
	}
}

// crashForTest abandons the queues as a crash would.
func (m *Queues) crashForTest() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	m.closeFiles()
}

// Index file "queues.index" (version 2, positions as in queues_blocks.go),
// written by Close and removed by OpenQueues:
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
		if v < queuesFormat {
			return false, fmt.Errorf("diskq: index %s: format version %d, this version reads %d: %w", path, v, queuesFormat, ErrOldFormat)
		}
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
// bytes each), sorted, and read in file order, each block read and decoded
// once (the records in RAM are sealed first). This makes a snapshot of
// records scattered over many queues cost sequential I/O instead of one
// random read per record. Records come in
// file order: FIFO within a queue, except that records moved by compaction
// may come after later records of their queue. fn's rec is only valid
// during the call. The queues' lock is held throughout.
func (m *Queues) Snapshot(fn func(id uint64, rec []byte) error) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	if err := m.sealLocked(); err != nil {
		return err
	}
	return m.snapshotLocked(fn)
}

func (m *Queues) snapshotLocked(fn func(id uint64, rec []byte) error) error {
	type ent struct{ pos, id uint64 }
	var ents []ent
	var b decodedBlock
	for first := 0; first < len(m.segs); {
		last, live := first, int64(0)
		for last < len(m.segs) && (last == first || live+m.segs[last].live <= snapshotWindow) {
			live += m.segs[last].live
			last++
		}
		lo := blockPos(m.segs[first].base, 0)
		hi := uint64(math.MaxUint64)
		if last < len(m.segs) {
			hi = blockPos(m.segs[last].base, 0)
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
		for _, e := range ents {
			rec, err := m.recordAt(e.id, e.pos, &b)
			if err != nil {
				return fmt.Errorf("diskq: snapshot: %w", err)
			}
			if err := fn(e.id, rec); err != nil {
				return err
			}
		}
		first = last
	}
	return nil
}
