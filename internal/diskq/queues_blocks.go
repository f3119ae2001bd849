package diskq

import (
	"encoding/binary"
	"fmt"
)

// Queues segments (format version 2) hold blocks (block.go's layout and
// codec, shared with Queue): each block is a run of records, compressed
// with zstd as a whole. A Queues block's record is (uvarint id, then the
// data), framed as in any block (uvarint length, bytes).
//
// Records are not written one by one: Enqueue keeps them in RAM, per id,
// until the records held reach Options.BufferBytes (or Sync, Snapshot,
// Checkpoint or Close needs them on disk). They are then sealed id by id:
// the records of one id go into the blocks together, in FIFO order, and
// a block is closed when it reaches blockTarget raw bytes. So a block
// holds a few ids' runs, URLs of one host next to each other (which is
// what compresses), and draining one id decodes few blocks beyond its own
// records.
//
// Position of a record: (logical offset of its block) << posIndexBits |
// (index of the record in its block). The logical offset of byte off of
// segment s is s.base+off, as in format version 1; positions only grow
// within the current segment, so a position identifies its segment and
// block.

const (
	// blockTarget is the raw size at which a Queues block is closed: small
	// enough that reading one id's run decodes little of the others',
	// large enough to compress.
	blockTarget = 8 << 10
	// posIndexBits is the room for the record index in a position; a
	// block holds at most blockTarget/2+1 records (each at least 2 bytes
	// raw), well below 1<<posIndexBits.
	posIndexBits = 16
)

func blockPos(blockOff uint64, idx int) uint64 { return blockOff<<posIndexBits | uint64(idx) }
func posBlock(pos uint64) uint64               { return pos >> posIndexBits }
func posIndex(pos uint64) int                  { return int(pos & (1<<posIndexBits - 1)) }

// decodedBlock is a block of a Queues read and decoded: the raw records
// and the offsets at which each starts.
type decodedBlock struct {
	seg  *mseg
	off  int64 // offset of the block in seg's file
	raw  []byte
	recs []int // start of record i in raw
}

// record returns the id and data of record i of b.
func (b *decodedBlock) record(i int) (id uint64, data []byte, ok bool) {
	if i >= len(b.recs) {
		return 0, nil, false
	}
	rec, _ := nextRecord(b.raw, b.recs[i])
	id, k := binary.Uvarint(rec)
	if k <= 0 {
		return 0, nil, false
	}
	return id, rec[k:], true
}

// readBlock reads, checks and decodes the block at offset off of segment s
// into b (reusing its buffers).
func (m *Queues) readBlock(s *mseg, off int64, b *decodedBlock) error {
	bad := func(why string) error {
		return fmt.Errorf("diskq: segment %s offset %d: %s: %w", m.segPath(s.seq), off, why, ErrCorrupt)
	}
	if off < segHeaderSize || off+blockHeader > s.size {
		return bad("no block here")
	}
	want := min(s.size-off, blockHeader+blockTarget)
	if cap(m.rd) < int(want) {
		m.rd = make([]byte, want)
	}
	buf := m.rd[:want]
	got, err := s.f.ReadAt(buf, off)
	if got < blockHeader {
		return bad(fmt.Sprintf("short read (%v)", err))
	}
	h, why := parseBlockHeader(buf[:blockHeader])
	if why != "" {
		return bad(why)
	}
	end := blockHeader + int64(h.stored)
	if off+end > s.size {
		return bad("block beyond the end of the segment")
	}
	if int64(got) < end {
		if cap(m.rd) < int(end) {
			m.rd = append(m.rd[:got], make([]byte, int(end)-got)...)
		}
		buf = m.rd[:end]
		if _, err := s.f.ReadAt(buf[got:], off+int64(got)); err != nil {
			return bad(fmt.Sprintf("read: %v", err))
		}
	}
	buf = buf[:end]
	if !h.sumOK(buf, buf[blockHeader:]) {
		return bad("checksum mismatch")
	}
	raw, why := m.codec.decode(b.raw, h, buf[blockHeader:])
	if why != "" {
		return bad(why)
	}
	if h.codec == codecStored {
		raw = append(b.raw[:0], raw...) // buf is reused by the next read
	}
	b.seg, b.off, b.raw, b.recs = s, off, raw, b.recs[:0]
	for p := 0; p < len(raw); {
		b.recs = append(b.recs, p)
		_, p = nextRecord(raw, p)
	}
	return nil
}

// recordAt returns the data of the record at pos, which must belong to
// queue id, decoding its block into b unless b holds it already.
func (m *Queues) recordAt(id, pos uint64, b *decodedBlock) ([]byte, error) {
	s := m.segFor(pos)
	if s == nil {
		return nil, fmt.Errorf("diskq: queue %d: position %d in no segment: %w", id, pos, ErrCorrupt)
	}
	off := int64(posBlock(pos) - s.base)
	if b.seg != s || b.off != off || b.raw == nil {
		b.seg = nil
		if err := m.readBlock(s, off, b); err != nil {
			return nil, err
		}
	}
	rid, data, ok := b.record(posIndex(pos))
	if !ok {
		return nil, fmt.Errorf("diskq: segment %s offset %d: no record %d in the block: %w", m.segPath(s.seq), off, posIndex(pos), ErrCorrupt)
	}
	if rid != id {
		return nil, fmt.Errorf("diskq: segment %s offset %d: record of queue %d where queue %d expected: %w", m.segPath(s.seq), off, rid, id, ErrCorrupt)
	}
	return data, nil
}

// blockWriter gathers records into blocks and writes them to the current
// segment; each record's position is known once its block is written.
type blockWriter struct {
	raw   []byte
	ids   []uint64 // id of each record in raw
	enc   []byte   // the encoded block
	first uint64   // position of the first record of the block last written
}

func (bw *blockWriter) add(id uint64, data []byte) {
	var idb [binary.MaxVarintLen64]byte
	k := binary.PutUvarint(idb[:], id)
	bw.raw = binary.AppendUvarint(bw.raw, uint64(k+len(data)))
	bw.raw = append(bw.raw, idb[:k]...)
	bw.raw = append(bw.raw, data...)
	bw.ids = append(bw.ids, id)
}

func (bw *blockWriter) full() bool { return len(bw.raw) >= blockTarget }

// writeBlockLocked compresses and writes the records of bw as one block at
// the end of the current segment (rolling over first if it would outgrow
// a segment), counts them live there, and calls placed with the position
// of each, in order. bw is empty afterwards.
func (m *Queues) writeBlockLocked(bw *blockWriter, placed func(i int, id, pos uint64)) error {
	if len(bw.ids) == 0 {
		return nil
	}
	bw.enc = m.codec.encode(bw.enc, bw.raw, len(bw.ids))
	if m.w.full(m.cur().size, int64(len(bw.enc))) {
		if err := m.rollLocked(); err != nil {
			return err
		}
	}
	c := m.cur()
	at := c.base + uint64(c.size)
	if err := m.w.write(bw.enc, "enqueue"); err != nil {
		return err
	}
	c.size += int64(len(bw.enc))
	c.total += int64(len(bw.ids))
	c.live += int64(len(bw.ids))
	for i, id := range bw.ids {
		placed(i, id, blockPos(at, i))
	}
	bw.raw, bw.ids = bw.raw[:0], bw.ids[:0]
	return nil
}

// sealLocked writes the records held in RAM (Enqueue's) to the current
// segment, id by id, and appends their positions to the queues' indexes.
func (m *Queues) sealLocked() error {
	if m.openBytes == 0 {
		return nil
	}
	bw := &m.bw
	push := func(_ int, id, pos uint64) { m.ids[id].push(pos) }
	for _, id := range m.openIDs {
		q := m.ids[id]
		if q == nil || q.openN == 0 {
			continue
		}
		for p := q.openR; p < len(q.open); {
			var rec []byte
			rec, p = nextRecord(q.open, p)
			bw.add(id, rec)
			if bw.full() {
				if err := m.writeBlockLocked(bw, push); err != nil {
					return err
				}
			}
		}
		// push counts the records on disk as their blocks are written.
		q.open, q.openR, q.openN = nil, 0, 0
	}
	if err := m.writeBlockLocked(bw, push); err != nil {
		return err
	}
	m.openIDs = m.openIDs[:0]
	m.openBytes = 0
	return nil
}
