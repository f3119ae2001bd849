package cluster

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/klauspost/compress/s2"
)

// Kind says what a batch's records are and where the receiver puts them.
type Kind uint8

const (
	// KindURLs: URLs (each its frontier key: meta, then the URL) for the
	// receiver's sieve; the receiver owns their politeness-key group.
	KindURLs Kind = 1
	// KindReady: URLs out of the sender's sieve for the receiver's ready
	// queue; the receiver owns the IP address their host resolved to.
	KindReady Kind = 2
	// KindRevisit: revisit-schedule entries moving to the receiver, the
	// owner of the address their host was placed at (each the entry's
	// frontier record and its schedule State; the agent encodes them).
	KindRevisit Kind = 3
)

func (k Kind) String() string {
	switch k {
	case KindURLs:
		return "urls"
	case KindReady:
		return "ready"
	case KindRevisit:
		return "revisit"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// BatchID names a batch across the cluster: the sending agent, the
// sender's incarnation (one more at every start of its process) and a
// sequence number within it. A receiver applies each id at most once.
type BatchID struct {
	Sender      string
	Incarnation uint64
	Seq         uint64
}

func (id BatchID) String() string { return fmt.Sprintf("%s/%d/%d", id.Sender, id.Incarnation, id.Seq) }

// Batch is a group of records from one agent to another.
type Batch struct {
	ID      BatchID
	Kind    Kind
	Epoch   uint64 // the sender's view when the batch's first record was routed (fence.go)
	Records [][]byte
}

// The wire form of a batch (also its form in the outbox and the inbox):
//
//	"PTB1"  magic
//	kind    1 byte
//	uvarint len(sender), sender
//	uvarint incarnation, uvarint seq
//	uvarint epoch: the view the records were routed under
//	uvarint count of records
//	S2 block of: per record uvarint(len), bytes
//
// The epoch is the epoch of the sender's view when the batch's first
// record was routed, so no newer than the view of any of its records: a
// receiver refuses a batch older than its fence (fence.go), and a batch
// of ready URLs newer than its view until it has that view (receive.go).
//
// Format history (the bytes have not changed since "PTB1"):
//   - the epoch was the view at the batch's write to the outbox, which
//     may be newer than the view its records were routed under; it is now
//     the view at its first record's routing, which the fence needs. A
//     batch written before still reads: its later stamp only lets a
//     receiver take it where it would now refuse it, and the receiver's
//     host forwards the records it no longer owns, as for any.
//
// The whole is carried inside the exchange's mutually authenticated TLS;
// the batch itself carries no key material.
const batchMagic = "PTB1"

// MaxBatchBytes bounds a batch's wire form; maxDecodedBytes its records
// decompressed.
const (
	MaxBatchBytes   = 8 << 20
	maxDecodedBytes = 32 << 20
)

var errBadBatch = errors.New("cluster: malformed batch")

// Encode appends b's wire form to dst; scratch is reused for the
// uncompressed records (may be nil) and returned for the next call.
func (b *Batch) Encode(dst, scratch []byte) (out, scratchOut []byte) {
	raw := scratch[:0]
	for _, r := range b.Records {
		raw = appendRecord(raw, r)
	}
	return b.encodeRaw(dst, raw, len(b.Records)), raw
}

// appendRecord appends one record to a batch's uncompressed records.
func appendRecord(raw, rec []byte) []byte {
	raw = binary.AppendUvarint(raw, uint64(len(rec)))
	return append(raw, rec...)
}

// encodeRaw appends the wire form of b with count records already laid
// out in raw (appendRecord); b.Records is not read.
func (b *Batch) encodeRaw(dst, raw []byte, count int) []byte {
	// One allocation of the final size at most: the header, then room for
	// S2's worst case, compressed in place.
	dst = slices.Grow(dst, len(batchMagic)+1+6*binary.MaxVarintLen64+len(b.ID.Sender)+s2.MaxEncodedLen(len(raw)))
	dst = append(dst, batchMagic...)
	dst = append(dst, byte(b.Kind))
	dst = binary.AppendUvarint(dst, uint64(len(b.ID.Sender)))
	dst = append(dst, b.ID.Sender...)
	dst = binary.AppendUvarint(dst, b.ID.Incarnation)
	dst = binary.AppendUvarint(dst, b.ID.Seq)
	dst = binary.AppendUvarint(dst, b.Epoch)
	dst = binary.AppendUvarint(dst, uint64(count))
	n := len(dst)
	enc := s2.Encode(dst[n:n+s2.MaxEncodedLen(len(raw))], raw)
	return dst[:n+len(enc)]
}

// DecodeBatch parses a wire form. Records alias an internal buffer, not
// wire.
func DecodeBatch(wire []byte) (*Batch, error) {
	b, count, p, ok := decodeBatchHead(wire)
	if !ok {
		return nil, errBadBatch
	}
	dl, err := s2.DecodedLen(p)
	if err != nil || dl > maxDecodedBytes || count > uint64(dl) {
		return nil, errBadBatch
	}
	raw, err := s2.Decode(nil, p)
	if err != nil {
		return nil, errBadBatch
	}
	b.Records = make([][]byte, 0, count)
	for len(raw) > 0 {
		l, k := binary.Uvarint(raw)
		if k <= 0 || l > uint64(len(raw)-k) {
			return nil, errBadBatch
		}
		b.Records = append(b.Records, raw[k:k+int(l):k+int(l)])
		raw = raw[k+int(l):]
	}
	if uint64(len(b.Records)) != count {
		return nil, errBadBatch
	}
	return b, nil
}

// decodeBatchHead parses a wire form's header: the batch without its
// records, the count of records it declares, and the S2 block after it.
func decodeBatchHead(wire []byte) (b *Batch, count uint64, block []byte, ok bool) {
	if len(wire) > MaxBatchBytes || len(wire) < len(batchMagic)+1 || string(wire[:4]) != batchMagic {
		return nil, 0, nil, false
	}
	b = &Batch{Kind: Kind(wire[4])}
	r := fields{p: wire[5:]}
	b.ID.Sender = r.str(255)
	b.ID.Incarnation = r.uvarint()
	b.ID.Seq = r.uvarint()
	b.Epoch = r.uvarint()
	count = r.uvarint()
	if r.bad || b.ID.Sender == "" {
		return nil, 0, nil, false
	}
	return b, count, r.p, true
}

// wireRecords returns the count of records a batch's wire form declares
// in its header, without decoding them (each record takes a byte at
// least, decoded): 0 for bytes that are not a batch's wire form.
func wireRecords(wire []byte) int {
	if _, count, _, ok := decodeBatchHead(wire); ok && count <= maxDecodedBytes {
		return int(count)
	}
	return 0
}
