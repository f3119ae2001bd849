package cluster

import (
	"encoding/binary"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

// What the inbox's and the outbox's logs share: segment files named by a
// number (20 decimal digits, ".log"), and fields read from a frame's body
// or a batch's header in order.

// segmentPath returns the path of segment num in dir.
func segmentPath(dir string, num uint64) string {
	return filepath.Join(dir, fmt.Sprintf("%020d.log", num))
}

// segmentNum returns the number of the segment file called name, and
// whether name is one.
func segmentNum(name string) (uint64, bool) {
	s, ok := strings.CutSuffix(name, ".log")
	if !ok || len(s) != 20 {
		return 0, false
	}
	n, err := strconv.ParseUint(s, 10, 64)
	return n, err == nil
}

// fields reads uvarints and length-prefixed strings from p, in order.
// After the first one that does not parse, every read returns a zero
// value and bad is set.
type fields struct {
	p   []byte
	bad bool
}

// uvarint reads one uvarint.
func (f *fields) uvarint() uint64 {
	v, k := binary.Uvarint(f.p)
	if k <= 0 {
		f.fail()
		return 0
	}
	f.p = f.p[k:]
	return v
}

// str reads a uvarint length of at most maxLen, then that many bytes.
func (f *fields) str(maxLen int) string {
	l := f.uvarint()
	if f.bad || l > uint64(maxLen) || l > uint64(len(f.p)) {
		f.fail()
		return ""
	}
	s := string(f.p[:l])
	f.p = f.p[l:]
	return s
}

func (f *fields) fail() { f.p, f.bad = nil, true }
