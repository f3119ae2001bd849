package diskq

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
)

// Scan calls fn for every record in the queue, head first, without
// consuming any, until fn returns false. It seals the open block, then
// reads the segment files without holding the queue's lock (blocks are
// immutable once written), so Push and Pop go on meanwhile: it sees the
// records queued when it began, less those popped while it reads (a
// segment deleted under it ends its part early). The slice given to fn is
// valid only during the call.
func (q *Queue) Scan(fn func(rec []byte) bool) error {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return ErrClosed
	}
	if err := q.sealLocked(); err != nil {
		q.mu.Unlock()
		return err
	}
	hi := q.segIndex(q.rseq)
	if hi < 0 {
		q.mu.Unlock()
		return nil
	}
	segs := append([]qseg(nil), q.segs[hi:]...)
	off, skip := q.roff, q.rskip
	q.mu.Unlock()

	var dec []byte
	for _, s := range segs {
		more, err := q.scanSegment(s, off, skip, &dec, fn)
		if err != nil || !more {
			return err
		}
		off, skip = segHeaderSize, 0
	}
	return nil
}

// scanSegment reads the blocks of s from off to its size as it was when
// Scan began, skipping the first skip records.
func (q *Queue) scanSegment(s qseg, off, skip int64, dec *[]byte, fn func([]byte) bool) (bool, error) {
	f, err := os.Open(q.segPath(s.seq))
	if errors.Is(err, os.ErrNotExist) {
		return true, nil // consumed and deleted meanwhile
	}
	if err != nil {
		return false, fmt.Errorf("diskq: scan: %w", err)
	}
	defer f.Close()
	br := bufio.NewReaderSize(io.NewSectionReader(f, off, s.size-off), 256<<10)
	var h [blockHeader]byte
	var data []byte
	bad := func(p int64, why string) error {
		return fmt.Errorf("diskq: scan %s offset %d: %s: %w", q.segPath(s.seq), p, why, ErrCorrupt)
	}
	for p := off; p < s.size; {
		if _, err := io.ReadFull(br, h[:]); err != nil {
			return false, bad(p, err.Error())
		}
		b, why := parseBlockHeader(h[:])
		if why == "" && p+blockHeader+int64(b.stored) > s.size {
			why = "block past the end of the segment"
		}
		if why != "" {
			return false, bad(p, why)
		}
		data = append(data[:0], make([]byte, b.stored)...)
		if _, err := io.ReadFull(br, data); err != nil {
			return false, bad(p, err.Error())
		}
		if !b.sumOK(h[:], data) {
			return false, bad(p, "checksum mismatch")
		}
		raw, why := q.codec.decode(*dec, b, data)
		if why != "" {
			return false, bad(p, why)
		}
		if b.codec == codecZstd {
			*dec = raw
		}
		for i, r := 0, 0; i < int(b.count); i++ {
			var rec []byte
			rec, r = nextRecord(raw, r)
			if int64(i) < skip {
				continue
			}
			if !fn(rec) {
				return false, nil
			}
		}
		skip = 0
		p += blockHeader + int64(b.stored)
	}
	return true, nil
}
