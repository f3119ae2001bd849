package lang

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// moMessage is one entry of a .mo file: the original and its translation
// (the first form of each, for entries with plural forms).
type moMessage struct {
	ID, Str string
}

// errMO is returned for a file that is not a GNU gettext .mo file.
var errMO = errors.New("not a gettext .mo file")

// readMO returns the messages of the .mo file b, its header (the entry of
// the empty ID) left out.
func readMO(b []byte) ([]moMessage, error) {
	if len(b) < 28 {
		return nil, errMO
	}
	var bo binary.ByteOrder
	switch binary.LittleEndian.Uint32(b) {
	case 0x950412de:
		bo = binary.LittleEndian
	case 0xde120495:
		bo = binary.BigEndian
	default:
		return nil, errMO
	}
	n, orig, trans := bo.Uint32(b[8:]), bo.Uint32(b[12:]), bo.Uint32(b[16:])
	str := func(table, i uint32) (string, error) {
		at := uint64(table) + 8*uint64(i)
		if at+8 > uint64(len(b)) {
			return "", fmt.Errorf("%w: table past the end", errMO)
		}
		l, off := uint64(bo.Uint32(b[at:])), uint64(bo.Uint32(b[at+4:]))
		if off+l > uint64(len(b)) {
			return "", fmt.Errorf("%w: string past the end", errMO)
		}
		s := b[off : off+l]
		for j, c := range s {
			if c == 0 { // plural forms follow
				s = s[:j]
				break
			}
		}
		return string(s), nil
	}
	out := make([]moMessage, 0, min(n, 1<<16))
	for i := range n {
		id, err := str(orig, i)
		if err != nil {
			return nil, err
		}
		s, err := str(trans, i)
		if err != nil {
			return nil, err
		}
		if id != "" {
			out = append(out, moMessage{ID: id, Str: s})
		}
	}
	return out, nil
}
