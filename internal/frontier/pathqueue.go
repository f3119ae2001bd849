package frontier

import "encoding/binary"

// pathQueue is the FIFO of path+queries of one visit state, stored as
// BUbiNG does: one byte slice holding uvarint-length-prefixed records, so a
// queued URL costs its bytes plus one or two bytes of length, and no
// per-URL allocation or pointer.
//
// Invariants: buf[head:] holds exactly n complete records; head <= len(buf).
// The consumed prefix buf[:head] is reclaimed by compaction when it is more
// than half of the slice; an empty queue has no buffer (buf is nil).
type pathQueue struct {
	buf  []byte
	head int
	n    int
}

// push appends one record.
func (q *pathQueue) push(pq []byte) {
	q.buf = binary.AppendUvarint(q.buf, uint64(len(pq)))
	q.buf = append(q.buf, pq...)
	q.n++
}

// pop removes the first record and returns it as a new string.
func (q *pathQueue) pop() (string, bool) {
	if q.n == 0 {
		return "", false
	}
	l, k := binary.Uvarint(q.buf[q.head:])
	start := q.head + k
	s := string(q.buf[start : start+int(l)])
	q.head = start + int(l)
	q.n--
	if q.n == 0 {
		// Most visit states are idle most of the time: an empty queue
		// holds no buffer.
		q.buf = nil
		q.head = 0
	} else if q.head > len(q.buf)/2 && q.head > 4096 {
		copy(q.buf, q.buf[q.head:])
		q.buf = q.buf[:len(q.buf)-q.head]
		q.head = 0
	}
	return s, true
}

// len returns the number of queued records.
func (q *pathQueue) len() int { return q.n }

// bytes returns the bytes held in RAM, including reclaimable ones.
func (q *pathQueue) bytes() int { return cap(q.buf) }

// each calls fn for every queued record in order, without consuming.
func (q *pathQueue) each(fn func(pq []byte)) {
	p := q.head
	for i := 0; i < q.n; i++ {
		l, k := binary.Uvarint(q.buf[p:])
		p += k
		fn(q.buf[p : p+int(l)])
		p += int(l)
	}
}
