package testweb

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"hash/crc32"
	"sync"

	"github.com/andybalholm/brotli"
)

// bombUnit is the decoded size of the part the gzip and deflate bombs
// repeat; a bomb decodes to Config.BombBytes rounded up to a whole unit.
const bombUnit = 1 << 20

// bombs holds the lazily built compression bombs.
//
// Building them costs what one unit costs to compress, whatever
// Config.BombBytes is, for gzip and deflate: both repeat the compressed
// unit (see zerosDeflate). Brotli streams do not concatenate, so the
// brotli bomb is compressed whole, at a fast quality.
type bombs struct {
	once           sync.Once
	gzip, zlib, br []byte
}

// buildBombs builds the three bombs, once.
func (w *Web) buildBombs() {
	w.bombs.once.Do(func() {
		n := int((w.cfg.BombBytes + bombUnit - 1) / bombUnit)
		unit, last := zerosDeflate()
		w.bombs.gzip = gzipBomb(unit, last, n)
		w.bombs.zlib = zlibBomb(unit, last, n)
		var bb bytes.Buffer
		bw := brotli.NewWriterLevel(&bb, 1)
		zero := make([]byte, bombUnit)
		for range n {
			bw.Write(zero)
		}
		bw.Close()
		w.bombs.br = bb.Bytes()
	})
}

// zerosDeflate returns a raw DEFLATE encoding of one unit of zeros ended by
// a sync flush (its blocks are not final, it ends on a byte boundary, and
// it refers back only to bytes it decodes itself, so k copies of it in a
// row decode to k units), and a final empty block that ends a stream.
func zerosDeflate() (unit, last []byte) {
	var u, l bytes.Buffer
	fw, _ := flate.NewWriter(&u, flate.BestCompression)
	fw.Write(make([]byte, bombUnit))
	fw.Flush()
	lw, _ := flate.NewWriter(&l, flate.BestCompression)
	lw.Close()
	return u.Bytes(), l.Bytes()
}

// gzipBomb is n gzip members (RFC 1952), each one unit of zeros: a
// multi-member stream.
func gzipBomb(unit, last []byte, n int) []byte {
	member := []byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 2, 255} // deflate, no name or time, best compression, OS unknown
	member = append(append(member, unit...), last...)
	member = binary.LittleEndian.AppendUint32(member, crc32.ChecksumIEEE(make([]byte, bombUnit)))
	member = binary.LittleEndian.AppendUint32(member, bombUnit)
	return bytes.Repeat(member, n)
}

// zlibBomb is one zlib stream (RFC 1950, HTTP's "deflate") of n units of
// zeros.
func zlibBomb(unit, last []byte, n int) []byte {
	out := []byte{0x78, 0xda} // deflate, 32 KiB window, best compression
	out = append(out, bytes.Repeat(unit, n)...)
	out = append(out, last...)
	// Adler-32 of L zeros: its sum of bytes stays 1 and its sum of sums
	// grows by that 1 per byte, to L mod 65521.
	size := int64(n) * bombUnit
	return binary.BigEndian.AppendUint32(out, uint32(size%65521)<<16|1)
}
