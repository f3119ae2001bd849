package diskq

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
)

// Scan calls fn for every record in the queue, head first, without
// consuming any, until fn returns false. It reads the segment files
// without holding the queue's lock (records are immutable once written),
// so Push and Pop go on meanwhile: it sees the records queued when it
// began, less those popped while it reads (a segment deleted under it ends
// its part early). The slice given to fn is valid only during the call.
func (q *Queue) Scan(fn func(rec []byte) bool) error {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return ErrClosed
	}
	if err := q.w.flushTo(q.tail().size); err != nil {
		q.mu.Unlock()
		return err
	}
	hi := q.segIndex(q.rseq)
	if hi < 0 {
		q.mu.Unlock()
		return nil
	}
	segs := append([]qseg(nil), q.segs[hi:]...)
	off := q.roff
	q.mu.Unlock()

	var rec []byte
	for _, s := range segs {
		more, err := q.scanSegment(s, off, &rec, fn)
		if err != nil || !more {
			return err
		}
		off = segHeaderSize
	}
	return nil
}

// scanSegment reads the records of s from off to its size as it was when
// Scan began.
func (q *Queue) scanSegment(s qseg, off int64, rec *[]byte, fn func([]byte) bool) (bool, error) {
	f, err := os.Open(q.segPath(s.seq))
	if errors.Is(err, os.ErrNotExist) {
		return true, nil // consumed and deleted meanwhile
	}
	if err != nil {
		return false, fmt.Errorf("diskq: scan: %w", err)
	}
	defer f.Close()
	br := bufio.NewReaderSize(io.NewSectionReader(f, off, s.size-off), 256<<10)
	var hdr [qRecHeader]byte
	for p := off; p < s.size; {
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			return false, fmt.Errorf("diskq: scan %s offset %d: %v: %w", q.segPath(s.seq), p, err, ErrCorrupt)
		}
		l := binary.LittleEndian.Uint32(hdr[:4])
		if l > MaxRecordBytes || p+qRecHeader+int64(l) > s.size {
			return false, fmt.Errorf("diskq: scan %s offset %d: bad record length %d: %w", q.segPath(s.seq), p, l, ErrCorrupt)
		}
		*rec = append((*rec)[:0], make([]byte, l)...)
		if _, err := io.ReadFull(br, *rec); err != nil {
			return false, fmt.Errorf("diskq: scan %s offset %d: %v: %w", q.segPath(s.seq), p, err, ErrCorrupt)
		}
		if crcOf(hdr[:4], *rec) != binary.LittleEndian.Uint32(hdr[4:]) {
			return false, fmt.Errorf("diskq: scan %s offset %d: checksum mismatch: %w", q.segPath(s.seq), p, ErrCorrupt)
		}
		if !fn(*rec) {
			return false, nil
		}
		p += qRecHeader + int64(l)
	}
	return true, nil
}
