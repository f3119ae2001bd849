package diskq

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/klauspost/compress/zstd"
)

// Queue segments hold blocks of records, each block compressed as a whole
// (format version 2; see format.go for the bytes). A block is what the
// write buffer held when it was sealed: up to Options.BufferBytes of
// records, more only for the one record that overfilled it. URLs of one
// block share hosts, paths and words, so a block compresses to a third or
// less of its records.
//
// Block (all integers little endian), blockHeader = 20 bytes:
//
//	[0:4)   stored  uint32, bytes of block data following the header
//	[4:8)   raw     uint32, bytes of the records once decoded
//	[8:12)  count   uint32, records in the block, at least 1
//	[12]    codec   codecStored (the data are the records) or codecZstd
//	[13:16) zero
//	[16:20) crc     uint32, CRC-32C of bytes [0:16) and the stored data
//
// The decoded records are count times (uvarint length, length bytes of
// data), exactly raw bytes in all. A block is stored uncompressed when
// compression would not make it smaller. A block is valid only if its
// header is complete, its sizes are within bounds (stored <= raw <=
// maxBlockRaw), its data complete and its checksum right; decoding also
// checks the count and the raw size.

const (
	blockHeader = 20

	codecStored = 0
	codecZstd   = 1

	// maxBlockRaw bounds a block's decoded size: a full write buffer and
	// one largest record.
	maxBlockRaw = 2*MaxRecordBytes + 16

	// encoderWindow is the zstd window: matches reach back this far within
	// a block. What a URL repeats is mostly in the few thousand URLs before
	// it; a larger window costs the encoder memory for few more matches.
	encoderWindow = 256 << 10
)

// blockCodec compresses and decompresses a Queue's blocks. It holds one
// zstd encoder and decoder; both are used synchronously (no goroutines),
// and are safe for the concurrent use Scan makes of the decoder.
type blockCodec struct {
	enc *zstd.Encoder
	dec *zstd.Decoder
}

func newBlockCodec() (*blockCodec, error) {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1),
		zstd.WithLowerEncoderMem(true), zstd.WithWindowSize(encoderWindow), zstd.WithEncoderCRC(false), zstd.WithZeroFrames(true))
	if err != nil {
		return nil, fmt.Errorf("diskq: block encoder: %w", err)
	}
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
		zstd.WithDecoderMaxMemory(maxBlockRaw))
	if err != nil {
		enc.Close()
		return nil, fmt.Errorf("diskq: block decoder: %w", err)
	}
	return &blockCodec{enc: enc, dec: dec}, nil
}

func (c *blockCodec) close() {
	c.enc.Close()
	c.dec.Close()
}

// appendRecord appends one record, framed for a block, to raw.
func appendRecord(raw, rec []byte) []byte {
	raw = binary.AppendUvarint(raw, uint64(len(rec)))
	return append(raw, rec...)
}

// encode returns the block (header and data) of the count records in raw,
// built in dst[:0].
func (c *blockCodec) encode(dst, raw []byte, count int) []byte {
	dst = append(dst[:0], make([]byte, blockHeader)...)
	codec := byte(codecZstd)
	dst = c.enc.EncodeAll(raw, dst)
	if len(dst)-blockHeader >= len(raw) {
		codec = codecStored
		dst = append(dst[:blockHeader], raw...)
	}
	h := dst[:blockHeader]
	binary.LittleEndian.PutUint32(h[0:], uint32(len(dst)-blockHeader))
	binary.LittleEndian.PutUint32(h[4:], uint32(len(raw)))
	binary.LittleEndian.PutUint32(h[8:], uint32(count))
	h[12] = codec
	binary.LittleEndian.PutUint32(h[16:], crcOf(h[:16], dst[blockHeader:]))
	return dst
}

// blockHead is a decoded block header.
type blockHead struct {
	stored, raw, count uint32
	codec              byte
	crc                uint32
}

// parseBlockHeader decodes and checks the bounds of a block header; it
// returns a reason when the header cannot be valid.
func parseBlockHeader(h []byte) (blockHead, string) {
	b := blockHead{
		stored: binary.LittleEndian.Uint32(h[0:]),
		raw:    binary.LittleEndian.Uint32(h[4:]),
		count:  binary.LittleEndian.Uint32(h[8:]),
		codec:  h[12],
		crc:    binary.LittleEndian.Uint32(h[16:]),
	}
	switch {
	case b.codec != codecStored && b.codec != codecZstd:
		return b, fmt.Sprintf("unknown block codec %d", b.codec)
	case h[13] != 0 || h[14] != 0 || h[15] != 0:
		return b, "bad block header"
	case b.raw > maxBlockRaw || b.stored > b.raw || b.count == 0 || b.count > b.raw:
		return b, fmt.Sprintf("bad block sizes (stored %d, raw %d, records %d)", b.stored, b.raw, b.count)
	case b.codec == codecStored && b.stored != b.raw:
		return b, "stored block of the wrong size"
	}
	return b, ""
}

// sumOK reports whether data is the stored data the header h describes.
func (b blockHead) sumOK(h, data []byte) bool { return crcOf(h[:16], data) == b.crc }

// decode returns the records of a block whose checksum has been checked,
// decompressing into dst[:0] when needed. It returns a reason when the
// records do not match the header.
func (c *blockCodec) decode(dst []byte, b blockHead, data []byte) ([]byte, string) {
	raw := data
	if b.codec == codecZstd {
		var err error
		if raw, err = c.dec.DecodeAll(data, dst[:0]); err != nil {
			return nil, fmt.Sprintf("decompress block: %v", err)
		}
	}
	if len(raw) != int(b.raw) {
		return nil, fmt.Sprintf("block decodes to %d bytes, header says %d", len(raw), b.raw)
	}
	p, n := 0, uint32(0)
	for p < len(raw) {
		l, k := binary.Uvarint(raw[p:])
		if k <= 0 || l > MaxRecordBytes || uint64(len(raw)-p-k) < l {
			return nil, fmt.Sprintf("bad record %d in block", n)
		}
		p += k + int(l)
		n++
	}
	if n != b.count {
		return nil, fmt.Sprintf("block holds %d records, header says %d", n, b.count)
	}
	return raw, ""
}

// nextRecord returns the record at raw[p:] of a decoded block and where
// the next one starts.
func nextRecord(raw []byte, p int) (rec []byte, next int) {
	l, k := binary.Uvarint(raw[p:])
	return raw[p+k : p+k+int(l)], p + k + int(l)
}

// scanBlocks reads the blocks of a Queue segment file from offset from to
// size and calls fn with the offset and header of each valid one (its
// checksum checked, not decoded). It returns where the valid blocks end:
// size, or the start of the first invalid one.
func scanBlocks(f io.ReaderAt, from, size int64, bufSize int, fn func(off int64, b blockHead)) (end int64) {
	br := bufio.NewReaderSize(io.NewSectionReader(f, from, size-from), bufSize)
	end = from
	var h [blockHeader]byte
	var data []byte
	for {
		if _, err := io.ReadFull(br, h[:]); err != nil {
			return end
		}
		b, bad := parseBlockHeader(h[:])
		if bad != "" || int64(b.stored) > size-end-blockHeader {
			return end
		}
		if cap(data) < int(b.stored) {
			data = make([]byte, b.stored)
		}
		data = data[:b.stored]
		if _, err := io.ReadFull(br, data); err != nil || !b.sumOK(h[:], data) {
			return end
		}
		fn(end, b)
		end += blockHeader + int64(b.stored)
	}
}
