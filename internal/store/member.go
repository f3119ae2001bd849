package store

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"

	"github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/gzip"

	"github.com/petrel-crawler/petrel/internal/ascii"
)

// A response record whose body came compressed is still one gzip member
// (RFC 1952), so readers see nothing new, but its deflate stream (RFC 1951)
// deflates at most the head and stores the body:
//
//	gzip header   1f 8b 08 00 | MTIME 00 00 00 00 | XFL | OS ff
//	              10 bytes, as klauspost's gzip.Writer writes them (XFL 4
//	              at level 1, 2 at level 9, else 0)
//	the head      the WARC header and the HTTP header, when they are at
//	              least Options.StoreBelow bytes: deflated at
//	              Options.GzipLevel, ended by a sync flush (an empty
//	              non-final stored block, after which the stream is
//	              byte-aligned); shorter, they are stored with the body, as
//	              short records are (their Huffman tables would cost more
//	              than they save)
//	the body      the bytes after the HTTP header as transferred, then the
//	              record's closing "\r\n\r\n", in stored blocks:
//	                BFINAL|BTYPE  one byte, 00 (01 on the last block)
//	                LEN           uint16, little endian, at most 65,535
//	                NLEN          uint16, little endian, ^LEN
//	                LEN bytes
//	gzip trailer  CRC-32 (IEEE) of the whole record, then its length mod
//	              2^32, each uint32, little endian
//
// Invariants: the member inflates to exactly the bytes compress would have
// deflated (WARC header, block, "\r\n\r\n"); no block of the head refers
// to the body or the other way round (a stored block refers to nothing),
// so the head's encoder is simply left after its flush, never closed.
//
// Which bodies are stored (storedBody): a response with a Content-Encoding
// other than identity (gzip, br, deflate, zstd: stored as transferred, so
// already compressed), or with a Content-Type in compressedTypes, formats
// that are compressed in themselves. The rule reads the HTTP header only:
// it costs nothing per byte, and a body it stores wrongly (a PNG that
// deflate could still shrink) costs bytes, never correctness. Whatever
// the rule, klauspost's encoder already stores a block in which it finds no
// match, so a compressed body alone would be stored; it is the head's
// text in the same member that gives it matches, after which it
// Huffman-codes the whole body as literals, at many times the cost of
// copying it and for next to no gain (BENCHMARKS.md has the figures).

// maxStoredBlock is the most bytes one stored deflate block holds.
const maxStoredBlock = 65535

// compressedTypes are the media types (lower case, no parameters) whose
// bodies are compressed by their format and stored whatever their
// Content-Encoding.
var compressedTypes = [...]string{
	"image/jpeg", "image/png", "image/gif", "image/webp", "image/avif",
	"font/woff", "font/woff2",
	"video/mp4", "video/webm", "audio/mpeg", "audio/ogg",
	"application/zip", "application/gzip", "application/x-gzip",
	"application/zstd", "application/x-xz", "application/x-bzip2",
	"application/x-7z-compressed", "application/wasm",
}

// storedBody says whether the body of resp goes in stored blocks (see
// above): it is non-empty and already compressed.
func storedBody(resp httpResponse) bool {
	if len(resp.body) == 0 {
		return false
	}
	if resp.encoded {
		return true
	}
	for _, t := range compressedTypes {
		if ascii.EqualFold(resp.mime, t) {
			return true
		}
	}
	return false
}

// gzipXFL is the XFL byte klauspost's gzip.Writer writes at level.
func gzipXFL(level int) byte {
	switch level {
	case gzip.BestCompression:
		return 2
	case gzip.BestSpeed:
		return 4
	}
	return 0
}

// storedBodyMember appends to buf the gzip member (format above) of the
// response record r, whose WARC header is hdr and whose body is stored.
func (w *Writer) storedBodyMember(buf *bytes.Buffer, hdr []byte, r *recordSpec) {
	parts := [][]byte{hdr, r.block1[:r.bodyAt], r.block1[r.bodyAt:], r.block2, recordEnd}
	xfl := gzipXFL(w.opts.GzipLevel)
	if len(hdr)+r.bodyAt < w.opts.StoreBelow {
		storedMember(buf, nil, xfl, parts, 0)
		return
	}
	fw := w.flatePool.Get().(*flate.Writer)
	storedMember(buf, fw, xfl, parts, 2)
	fw.Reset(nil)
	w.flatePool.Put(fw)
}

// storedMember appends to dst one gzip member (format above) holding the
// concatenation of parts: the first deflated of them deflated by fw, which
// is reset onto dst and left after a sync flush (nil when deflated is 0),
// the rest stored. xfl is the header's XFL byte. Writes to a bytes.Buffer
// cannot fail, nor can fw's to it.
func storedMember(dst *bytes.Buffer, fw *flate.Writer, xfl byte, parts [][]byte, deflated int) {
	var crc uint32
	var size, stored int
	for i, p := range parts {
		crc = crc32.Update(crc, crc32.IEEETable, p)
		size += len(p)
		if i >= deflated {
			stored += len(p)
		}
	}
	blocks := max(1, (stored+maxStoredBlock-1)/maxStoredBlock)
	dst.Grow(10 + stored + 5*blocks + 8)
	dst.Write([]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, xfl, 0xff})
	if deflated > 0 {
		fw.Reset(dst)
		for _, p := range parts[:deflated] {
			_, _ = fw.Write(p)
		}
		_ = fw.Flush()
	}
	appendStoredBlocks(dst, stored, parts[deflated:])
	var trailer [8]byte
	binary.LittleEndian.PutUint32(trailer[:4], crc)
	binary.LittleEndian.PutUint32(trailer[4:], uint32(size))
	dst.Write(trailer[:])
}

// appendStoredBlocks writes the n bytes of parts to dst as stored deflate
// blocks, the last one final (one empty final block when n is 0).
func appendStoredBlocks(dst *bytes.Buffer, n int, parts [][]byte) {
	var part []byte
	for {
		k := min(n, maxStoredBlock)
		n -= k
		var final byte
		if n == 0 {
			final = 1
		}
		dst.Write([]byte{final, byte(k), byte(k >> 8), ^byte(k), ^byte(k >> 8)})
		for k > 0 {
			for len(part) == 0 {
				part, parts = parts[0], parts[1:]
			}
			c := min(k, len(part))
			dst.Write(part[:c])
			part, k = part[c:], k-c
		}
		if n == 0 {
			return
		}
	}
}
