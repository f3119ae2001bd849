package diskq

import (
	"encoding/binary"
	"fmt"
)

// Position is a consistent point of a Queue, returned by Mark: the head (the
// next record to pop) is at byte Offset of segment Segment, the tail (where
// the next record will be pushed) at byte TailOffset of segment TailSegment,
// and Len records lie between them.
//
// A Position is a value; it is serialised with MarshalBinary (45 bytes:
// version, the five fields, CRC-32C) so that it can be stored in a
// checkpoint and handed back to OpenAt after a crash.
type Position struct {
	Segment     uint64
	Offset      int64
	TailSegment uint64
	TailOffset  int64
	Len         int64
}

const positionVersion = 1
const positionSize = 1 + 5*8 + 4

// MarshalBinary encodes p in a self-checking binary form.
func (p Position) MarshalBinary() ([]byte, error) {
	return p.appendBinary(make([]byte, 0, positionSize)), nil
}

func (p Position) appendBinary(b []byte) []byte {
	start := len(b)
	b = append(b, positionVersion)
	b = binary.LittleEndian.AppendUint64(b, p.Segment)
	b = binary.LittleEndian.AppendUint64(b, uint64(p.Offset))
	b = binary.LittleEndian.AppendUint64(b, p.TailSegment)
	b = binary.LittleEndian.AppendUint64(b, uint64(p.TailOffset))
	b = binary.LittleEndian.AppendUint64(b, uint64(p.Len))
	return binary.LittleEndian.AppendUint32(b, crcOf(b[start:]))
}

// UnmarshalBinary decodes a Position encoded by MarshalBinary. It returns an
// error wrapping ErrCorrupt if data is malformed or fails its checksum.
func (p *Position) UnmarshalBinary(data []byte) error {
	if len(data) != positionSize {
		return fmt.Errorf("diskq: position: length %d, want %d: %w", len(data), positionSize, ErrCorrupt)
	}
	if data[0] != positionVersion {
		return fmt.Errorf("diskq: position: unsupported version %d: %w", data[0], ErrCorrupt)
	}
	if crcOf(data[:positionSize-4]) != binary.LittleEndian.Uint32(data[positionSize-4:]) {
		return fmt.Errorf("diskq: position: checksum mismatch: %w", ErrCorrupt)
	}
	q := Position{
		Segment:     binary.LittleEndian.Uint64(data[1:]),
		Offset:      int64(binary.LittleEndian.Uint64(data[9:])),
		TailSegment: binary.LittleEndian.Uint64(data[17:]),
		TailOffset:  int64(binary.LittleEndian.Uint64(data[25:])),
		Len:         int64(binary.LittleEndian.Uint64(data[33:])),
	}
	if err := q.validate(); err != nil {
		return err
	}
	*p = q
	return nil
}

func (p Position) validate() error {
	if p.Offset < segHeaderSize || p.TailOffset < segHeaderSize || p.Len < 0 ||
		p.TailSegment < p.Segment || (p.TailSegment == p.Segment && p.TailOffset < p.Offset) {
		return fmt.Errorf("diskq: position %+v: inconsistent: %w", p, ErrCorrupt)
	}
	return nil
}

// after reports whether p's tail lies after q's tail.
func (p Position) tailAfter(q Position) bool {
	return p.TailSegment > q.TailSegment || (p.TailSegment == q.TailSegment && p.TailOffset > q.TailOffset)
}
