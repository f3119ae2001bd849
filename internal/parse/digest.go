package parse

import (
	"encoding/binary"

	"github.com/cespare/xxhash/v2"

	"github.com/petrel-crawler/petrel/internal/urlx"
)

// Seeds of the two 64-bit xxhash digests that make the 128-bit TextDigest.
const (
	digestSeed0 = 0x9e3779b97f4a7c15
	digestSeed1 = 0xc2b2ae3d27d4eb4f
)

// digester computes BUbiNG's duplicate-content digest over a normalised
// rendering of the page: the scheme and authority of the page first, then
// tags by name only ("<p>", "</p>"; a frame or iframe keeps its src:
// "<iframe src>"), and text (outside script and style) with every digit
// turned into a space and every run of white space folded into one space;
// white space next to a tag is dropped. The rendering is fed, through a
// small buffer, to two xxhash64 digests with different seeds.
type digester struct {
	h0, h1  xxhash.Digest
	buf     []byte
	arr     [2048]byte
	pending bool // white space seen since the last text byte
	inText  bool // the last thing written was a text byte
}

func (d *digester) init(base urlx.URL) {
	d.h0.ResetWithSeed(digestSeed0)
	d.h1.ResetWithSeed(digestSeed1)
	d.buf = d.arr[:0]
	d.buf = append(d.buf, base.Scheme...)
	d.buf = append(d.buf, "://"...)
	d.buf = append(d.buf, base.Authority()...)
	d.buf = append(d.buf, '\n')
}

func (d *digester) flush() {
	_, _ = d.h0.Write(d.buf)
	_, _ = d.h1.Write(d.buf)
	d.buf = d.buf[:0]
}

func (d *digester) room(n int) {
	if len(d.buf)+n > cap(d.buf) {
		d.flush()
	}
}

// text feeds the text of a text token. The parser uses feedText, which does
// this and simhasher.text in one pass; this simple form is the reference
// the tests hold feedText to.
func (d *digester) text(t []byte) {
	for _, c := range t {
		if isSpace(c) || c >= '0' && c <= '9' {
			d.pending = true
			continue
		}
		if len(d.buf)+2 > cap(d.buf) {
			d.flush()
		}
		if d.pending && d.inText {
			d.buf = append(d.buf, ' ')
		}
		d.pending = false
		d.inText = true
		d.buf = append(d.buf, c)
	}
}

// tag feeds a start (end false) or end tag.
func (d *digester) tag(end bool, name, src []byte) {
	d.pending, d.inText = false, false
	d.room(len(name) + len(src) + 4)
	d.buf = append(d.buf, '<')
	if end {
		d.buf = append(d.buf, '/')
	}
	d.buf = append(d.buf, name...)
	if src != nil {
		d.buf = append(d.buf, ' ')
		d.buf = append(d.buf, src...)
	}
	d.buf = append(d.buf, '>')
}

func (d *digester) sum() (s [16]byte) {
	d.flush()
	binary.BigEndian.PutUint64(s[:8], d.h0.Sum64())
	binary.BigEndian.PutUint64(s[8:], d.h1.Sum64())
	return s
}
