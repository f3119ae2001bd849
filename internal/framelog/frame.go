package framelog

import (
	"bufio"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"slices"
)

// HeaderLen is a frame's length and checksum, before its body.
const HeaderLen = 8

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrTorn is a frame cut short, longer than the reader's bound, or whose
// checksum fails.
var ErrTorn = errors.New("torn or corrupt frame")

// PutHeader writes into h[:HeaderLen] the header of the frame whose body
// is the concatenation of parts.
func PutHeader(h []byte, parts ...[]byte) {
	var n int
	var crc uint32
	for _, p := range parts {
		n += len(p)
		crc = crc32.Update(crc, castagnoli, p)
	}
	binary.LittleEndian.PutUint32(h, uint32(n))
	binary.LittleEndian.PutUint32(h[4:], crc)
}

// Append appends to dst the frame of body.
func Append(dst, body []byte) []byte {
	var h [HeaderLen]byte
	PutHeader(h[:], body)
	return append(append(dst, h[:]...), body...)
}

// Reader reads frames one after another.
type Reader struct {
	r   *bufio.Reader
	max uint32
	buf []byte
}

// NewReader reads frames from r through a buffer of size bytes; a body
// longer than max is torn.
func NewReader(r io.Reader, size int, max uint32) *Reader {
	return &Reader{r: bufio.NewReaderSize(r, size), max: max}
}

// Next returns the next frame's body, valid until the next call: io.EOF
// at a clean end, ErrTorn at a torn frame (cut short, too long or not
// matching its checksum), the reader's error when it fails otherwise.
func (r *Reader) Next() ([]byte, error) {
	var h [HeaderLen]byte
	if _, err := io.ReadFull(r.r, h[:]); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, ErrTorn
		}
		return nil, err
	}
	n := binary.LittleEndian.Uint32(h[:4])
	if n > r.max {
		return nil, ErrTorn
	}
	r.buf = slices.Grow(r.buf[:0], int(n))[:n]
	if _, err := io.ReadFull(r.r, r.buf); err != nil {
		if err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, ErrTorn
		}
		return nil, err
	}
	if crc32.Checksum(r.buf, castagnoli) != binary.LittleEndian.Uint32(h[4:]) {
		return nil, ErrTorn
	}
	return r.buf, nil
}

// Body returns the body of frame, one whole frame in memory: ErrTorn when
// frame is shorter or longer than its header says or fails its checksum.
func Body(frame []byte) ([]byte, error) {
	if len(frame) < HeaderLen || uint64(binary.LittleEndian.Uint32(frame)) != uint64(len(frame)-HeaderLen) {
		return nil, ErrTorn
	}
	body := frame[HeaderLen:]
	if crc32.Checksum(body, castagnoli) != binary.LittleEndian.Uint32(frame[4:]) {
		return nil, ErrTorn
	}
	return body, nil
}
