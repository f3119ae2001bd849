package diskq

import (
	"encoding/binary"
	"fmt"
)

// Position is a consistent point of a Queue, returned by Mark: the head (the
// next record to pop) is record Skip of the block at byte Offset of segment
// Segment, the tail (where the next block will be written) at byte
// TailOffset of segment TailSegment, and Len records lie between them.
//
// A Position is a value; it is serialised with MarshalBinary (53 bytes:
// version 2, the six fields, CRC-32C) so that it can be stored in a
// checkpoint and handed back to OpenAt after a crash. Version 1 (45 bytes,
// no Skip: a record's offset in an uncompressed segment) is refused with
// ErrOldFormat.
type Position struct {
	Segment     uint64
	Offset      int64
	Skip        int64
	TailSegment uint64
	TailOffset  int64
	Len         int64
}

const positionVersion = 2
const positionSize = 1 + 6*8 + 4

// MarshalBinary encodes p in a self-checking binary form.
func (p Position) MarshalBinary() ([]byte, error) {
	return p.appendBinary(make([]byte, 0, positionSize)), nil
}

func (p Position) appendBinary(b []byte) []byte {
	start := len(b)
	b = append(b, positionVersion)
	b = binary.LittleEndian.AppendUint64(b, p.Segment)
	b = binary.LittleEndian.AppendUint64(b, uint64(p.Offset))
	b = binary.LittleEndian.AppendUint64(b, uint64(p.Skip))
	b = binary.LittleEndian.AppendUint64(b, p.TailSegment)
	b = binary.LittleEndian.AppendUint64(b, uint64(p.TailOffset))
	b = binary.LittleEndian.AppendUint64(b, uint64(p.Len))
	return binary.LittleEndian.AppendUint32(b, crcOf(b[start:]))
}

// UnmarshalBinary decodes a Position encoded by MarshalBinary. It returns an
// error wrapping ErrCorrupt if data is malformed or fails its checksum, and
// one wrapping ErrOldFormat for a Position of version 1.
func (p *Position) UnmarshalBinary(data []byte) error {
	if len(data) > 0 && data[0] == 1 {
		return fmt.Errorf("diskq: position of version 1: %w", ErrOldFormat)
	}
	if len(data) != positionSize {
		return fmt.Errorf("diskq: position: length %d, want %d: %w", len(data), positionSize, ErrCorrupt)
	}
	if data[0] != positionVersion {
		return fmt.Errorf("diskq: position: unsupported version %d: %w", data[0], ErrCorrupt)
	}
	if crcOf(data[:positionSize-4]) != binary.LittleEndian.Uint32(data[positionSize-4:]) {
		return fmt.Errorf("diskq: position: checksum mismatch: %w", ErrCorrupt)
	}
	u := func(i int) uint64 { return binary.LittleEndian.Uint64(data[1+8*i:]) }
	q := Position{Segment: u(0), Offset: int64(u(1)), Skip: int64(u(2)),
		TailSegment: u(3), TailOffset: int64(u(4)), Len: int64(u(5))}
	if err := q.validate(); err != nil {
		return err
	}
	*p = q
	return nil
}

func (p Position) validate() error {
	if p.Offset < segHeaderSize || p.TailOffset < segHeaderSize || p.Len < 0 || p.Skip < 0 ||
		p.TailSegment < p.Segment || (p.TailSegment == p.Segment && p.TailOffset < p.Offset) {
		return fmt.Errorf("diskq: position %+v: inconsistent: %w", p, ErrCorrupt)
	}
	return nil
}

// after reports whether p's tail lies after q's tail.
func (p Position) tailAfter(q Position) bool {
	return p.TailSegment > q.TailSegment || (p.TailSegment == q.TailSegment && p.TailOffset > q.TailOffset)
}
