package sieve

// On-disk format (version 2)
//
// Version 2 (this one) adds the manifest's flag bit 1: the store's hashes
// are grouped (Options.GroupHash: the top GroupBits bits of each hash are
// its key group's slot). Version 1 stores hashed the URL alone: their
// entries cannot be regrouped without the URLs, so Open refuses them with
// an error saying so (finish such a crawl with the Petrel that began it).
//
// A store directory holds:
//
//	MANIFEST              the committed state (see below)
//	bKKK-GGGGGGGGGGGGGGGG.sv  one sorted run of hashes per bucket KKK, written
//	                      by the flush that committed generation G
//	aux-SSSSSSSSSSSSSSSS.log  keys of a batch in arrival order (transient)
//
// Integers are little-endian. CRCs are CRC-32C (Castagnoli).
//
// Store file:
//
//	header (32 bytes): magic "PTRLSIEV" | version u32 | flags u32 (bit 0:
//	  compressed) | count u64 | bucket u32 | crc u32 of the 28 bytes before
//	blocks: dataLen u32 | nkeys u32 | crc u32 of data | data
//
// A block holds at most blockKeys hashes, strictly increasing within the file.
// Uncompressed data is nkeys × u64. Compressed data is the first hash as u64,
// one byte k, then for every following hash its gap g to the previous one as
// a Golomb-Rice code with parameter 2^k: g>>k in unary (ones ended by a zero;
// 64 ones escape to a raw 64-bit gap), then the low k bits of g, bits packed
// LSB first. The header's count must equal the sum of the blocks' nkeys and
// the file must end exactly after the last block, so truncation is detected.
//
// Manifest:
//
//	magic "PTRLSMAN" | version u32 | flags u32 (bit 1: grouped) | gen u64 | nbuckets u32 |
//	nbuckets × (fileGen u64 | count u64 | size u64) | crc u32 of all before
//
// fileGen 0 means an empty bucket with no file. The manifest is replaced
// atomically (write MANIFEST.tmp, fsync, rename, fsync directory), which is the
// commit point of a flush. Store files are never modified once written, so the
// file set named by a manifest is immutable until a later commit deletes it.

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/bits"
	"os"
	"path/filepath"

	"github.com/petrel-crawler/petrel/internal/atomicfile"
)

const (
	fileMagic      = "PTRLSIEV"
	manifestMagic  = "PTRLSMAN"
	formatVersion  = 2
	headerSize     = 32
	blockHdrSize   = 12
	blockKeys      = 8192
	flagCompressed = 1
	flagGrouped    = 2 // manifest: hashes carry their group's slot (Options.GroupHash)
	manifestName   = "MANIFEST"
	ioBufSize      = 256 << 10
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func bucketFileName(bucket int, gen uint64) string {
	return fmt.Sprintf("b%03d-%016x.sv", bucket, gen)
}

func auxFileName(seq uint64) string { return fmt.Sprintf("aux-%016x.log", seq) }

// bucketMeta describes one bucket's committed file.
type bucketMeta struct {
	gen   uint64 // generation that wrote the file; 0: empty, no file
	count uint64
	size  int64
}

type manifest struct {
	flags   uint32
	gen     uint64
	buckets []bucketMeta
}

func (m manifest) clone() manifest {
	m.buckets = append([]bucketMeta(nil), m.buckets...)
	return m
}

func (m manifest) storedKeys() (n uint64, size int64) {
	for _, b := range m.buckets {
		n += b.count
		size += b.size
	}
	return n, size
}

func encodeManifest(m manifest) []byte {
	b := make([]byte, 0, 28+24*len(m.buckets)+4)
	b = append(b, manifestMagic...)
	b = binary.LittleEndian.AppendUint32(b, formatVersion)
	b = binary.LittleEndian.AppendUint32(b, m.flags)
	b = binary.LittleEndian.AppendUint64(b, m.gen)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(m.buckets)))
	for _, x := range m.buckets {
		b = binary.LittleEndian.AppendUint64(b, x.gen)
		b = binary.LittleEndian.AppendUint64(b, x.count)
		b = binary.LittleEndian.AppendUint64(b, uint64(x.size))
	}
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

func decodeManifest(b []byte) (manifest, error) {
	var m manifest
	if len(b) < 32 || string(b[:8]) != manifestMagic {
		return m, fmt.Errorf("sieve: manifest: bad magic or too short (%d bytes): %w", len(b), ErrCorrupt)
	}
	body, sum := b[:len(b)-4], binary.LittleEndian.Uint32(b[len(b)-4:])
	if crc32.Checksum(body, castagnoli) != sum {
		return m, fmt.Errorf("sieve: manifest: checksum mismatch: %w", ErrCorrupt)
	}
	if v := binary.LittleEndian.Uint32(b[8:]); v == 1 {
		return m, ErrFormat1
	} else if v != formatVersion {
		return m, fmt.Errorf("sieve: manifest: unsupported version %d", v)
	}
	m.flags = binary.LittleEndian.Uint32(b[12:])
	m.gen = binary.LittleEndian.Uint64(b[16:])
	n := int(binary.LittleEndian.Uint32(b[24:]))
	if n < 1 || n > 256 || n&(n-1) != 0 || len(body) != 28+24*n {
		return m, fmt.Errorf("sieve: manifest: bad bucket count %d: %w", n, ErrCorrupt)
	}
	m.buckets = make([]bucketMeta, n)
	for i := range m.buckets {
		p := body[28+24*i:]
		m.buckets[i] = bucketMeta{
			gen:   binary.LittleEndian.Uint64(p),
			count: binary.LittleEndian.Uint64(p[8:]),
			size:  int64(binary.LittleEndian.Uint64(p[16:])),
		}
		if x := m.buckets[i]; x.gen > m.gen || (x.gen == 0) != (x.count == 0) {
			return m, fmt.Errorf("sieve: manifest: bad entry for bucket %d: %w", i, ErrCorrupt)
		}
	}
	return m, nil
}

// ErrFormat1 is returned for a store of format version 1, whose hashes do
// not carry their group.
var ErrFormat1 = errors.New("sieve: store of format version 1 (hashes without their key group, made by an earlier Petrel): " +
	"this Petrel reads version 2 only and cannot regroup old hashes without their URLs; " +
	"finish that crawl with the Petrel that began it, or start a new crawl directory")

// checkGrouped refuses a store whose hashes were made the other way
// (grouped or not) than asked; an empty store takes either.
func checkGrouped(m manifest, grouped bool) error {
	if n, _ := m.storedKeys(); n == 0 || (m.flags&flagGrouped != 0) == grouped {
		return nil
	}
	if grouped {
		return errors.New("sieve: the store's hashes carry no key group, and a group hash was asked for")
	}
	return errors.New("sieve: the store's hashes carry their key group, and no group hash was given")
}

// writeManifest atomically replaces dir/MANIFEST with m.
func writeManifest(dir string, m manifest, sync bool) error {
	if err := prepareManifest(dir, m, sync); err != nil {
		return err
	}
	_, err := commitManifest(dir, sync)
	return err
}

// prepareManifest writes m to dir/MANIFEST.tmp (and syncs it), the part of a
// commit that can run out of space.
func prepareManifest(dir string, m manifest, sync bool) error {
	if err := writeFileSync(filepath.Join(dir, manifestName+".tmp"), encodeManifest(m), sync); err != nil {
		return fmt.Errorf("sieve: write manifest: %w", err)
	}
	return nil
}

// commitManifest renames MANIFEST.tmp over MANIFEST: the commit point. It
// reports whether the rename happened (a later directory sync may still fail).
func commitManifest(dir string, sync bool) (renamed bool, err error) {
	if err := os.Rename(filepath.Join(dir, manifestName+".tmp"), filepath.Join(dir, manifestName)); err != nil {
		return false, fmt.Errorf("sieve: commit manifest: %w", err)
	}
	if sync {
		if err := atomicfile.SyncDir(dir); err != nil {
			return true, fmt.Errorf("sieve: commit manifest: %w", err)
		}
	}
	return true, nil
}

func writeFileSync(path string, data []byte, sync bool) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil && sync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// storeWriter writes one store file.
type storeWriter struct {
	bufs       *ioBufs // where w and block go back (nil: nowhere)
	path       string
	f          *os.File
	w          *bufio.Writer
	compressed bool
	bucket     uint32
	block      []uint64
	enc        []byte
	count      uint64
	size       int64
}

func createStore(path string, bucket int, compressed bool, bufs *ioBufs) (*storeWriter, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("sieve: create store file: %w", err)
	}
	w := &storeWriter{bufs: bufs, path: path, f: f, w: bufs.writer(f), compressed: compressed,
		bucket: uint32(bucket), block: bufs.block(), enc: bufs.enc(), size: headerSize}
	if _, err := w.w.Write(make([]byte, headerSize)); err != nil {
		w.abort()
		return nil, fmt.Errorf("sieve: write store file: %w", err)
	}
	return w, nil
}

// add appends h, which must be larger than every hash added before.
func (w *storeWriter) add(h uint64) error {
	w.block = append(w.block, h)
	if len(w.block) == blockKeys {
		return w.flushBlock()
	}
	return nil
}

func (w *storeWriter) flushBlock() error {
	if len(w.block) == 0 {
		return nil
	}
	w.enc = w.enc[:0]
	w.enc = append(w.enc, make([]byte, blockHdrSize)...)
	if w.compressed {
		w.enc = riceEncode(w.enc, w.block)
	} else {
		for _, h := range w.block {
			w.enc = binary.LittleEndian.AppendUint64(w.enc, h)
		}
	}
	data := w.enc[blockHdrSize:]
	binary.LittleEndian.PutUint32(w.enc[0:], uint32(len(data)))
	binary.LittleEndian.PutUint32(w.enc[4:], uint32(len(w.block)))
	binary.LittleEndian.PutUint32(w.enc[8:], crc32.Checksum(data, castagnoli))
	w.count += uint64(len(w.block))
	w.size += int64(len(w.enc))
	w.block = w.block[:0]
	if _, err := w.w.Write(w.enc); err != nil {
		return fmt.Errorf("sieve: write store file: %w", err)
	}
	return nil
}

// finish completes the file and returns its count and size.
func (w *storeWriter) finish(sync bool) (uint64, int64, error) {
	err := w.flushBlock()
	if err == nil {
		err = w.w.Flush()
	}
	if err == nil {
		var flags uint32
		if w.compressed {
			flags = flagCompressed
		}
		_, err = w.f.WriteAt(storeHeader(flags, w.count, w.bucket), 0)
	}
	if err == nil && sync {
		err = w.f.Sync()
	}
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	w.release()
	if err != nil {
		os.Remove(w.path)
		return 0, 0, fmt.Errorf("sieve: finish store file %s: %w", filepath.Base(w.path), err)
	}
	return w.count, w.size, nil
}

func (w *storeWriter) abort() {
	w.f.Close()
	w.release()
	os.Remove(w.path)
}

// release gives the writer's buffers back; it writes nothing after.
func (w *storeWriter) release() {
	if w.w != nil {
		w.bufs.put(w.w, nil, w.block, w.enc)
		w.w, w.block, w.enc = nil, nil, nil
	}
}

func storeHeader(flags uint32, count uint64, bucket uint32) []byte {
	b := make([]byte, 0, headerSize)
	b = append(b, fileMagic...)
	b = binary.LittleEndian.AppendUint32(b, formatVersion)
	b = binary.LittleEndian.AppendUint32(b, flags)
	b = binary.LittleEndian.AppendUint64(b, count)
	b = binary.LittleEndian.AppendUint32(b, bucket)
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// storeReader streams the hashes of one store file, verifying as it goes.
type storeReader struct {
	bufs      *ioBufs // where r and block go back (nil: nowhere)
	name      string
	f         *os.File
	r         *bufio.Reader
	block     []uint64
	pos       int
	remaining uint64 // hashes not yet decoded
	read      int64  // bytes consumed
	size      int64
	last      uint64
	started   bool
	flags     uint32
	buf       []byte
	err       error
}

func openStore(path string, bucket int, meta bucketMeta, bufs *ioBufs) (*storeReader, error) {
	name := filepath.Base(path)
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("sieve: open store file: %w", err)
	}
	r := &storeReader{bufs: bufs, name: name, f: f, r: bufs.reader(f), size: meta.size,
		block: bufs.block(), buf: bufs.enc()}
	fail := func(format string, a ...any) (*storeReader, error) {
		r.close()
		return nil, fmt.Errorf("sieve: store file %s: %s: %w", name, fmt.Sprintf(format, a...), ErrCorrupt)
	}
	st, err := f.Stat()
	if err != nil {
		r.close()
		return nil, fmt.Errorf("sieve: stat store file: %w", err)
	}
	if st.Size() != meta.size {
		return fail("size %d, manifest says %d (truncated?)", st.Size(), meta.size)
	}
	var h [headerSize]byte
	if _, err := io.ReadFull(r.r, h[:]); err != nil {
		return fail("short header")
	}
	if string(h[:8]) != fileMagic || crc32.Checksum(h[:28], castagnoli) != binary.LittleEndian.Uint32(h[28:]) {
		return fail("bad header magic or checksum")
	}
	if v := binary.LittleEndian.Uint32(h[8:]); v != formatVersion {
		r.close()
		return nil, fmt.Errorf("sieve: store file %s: unsupported version %d", name, v)
	}
	r.flags = binary.LittleEndian.Uint32(h[12:])
	r.remaining = binary.LittleEndian.Uint64(h[16:])
	if r.remaining != meta.count || binary.LittleEndian.Uint32(h[24:]) != uint32(bucket) {
		return fail("header count %d bucket %d, manifest says %d bucket %d",
			r.remaining, binary.LittleEndian.Uint32(h[24:]), meta.count, bucket)
	}
	r.read = headerSize
	return r, nil
}

// next returns the next hash; ok is false at the end or on error (see r.err).
func (r *storeReader) next() (uint64, bool) {
	if r.pos < len(r.block) {
		v := r.block[r.pos]
		r.pos++
		return v, true
	}
	return r.slow()
}

func (r *storeReader) slow() (uint64, bool) {
	if r.err != nil {
		return 0, false
	}
	if r.remaining == 0 {
		if r.read != r.size {
			r.corrupt("%d trailing bytes", r.size-r.read)
		}
		return 0, false
	}
	if err := r.readBlock(); err != nil {
		r.err = err
		return 0, false
	}
	return r.next()
}

func (r *storeReader) corrupt(format string, a ...any) {
	r.err = fmt.Errorf("sieve: store file %s: %s: %w", r.name, fmt.Sprintf(format, a...), ErrCorrupt)
}

func (r *storeReader) readBlock() error {
	var h [blockHdrSize]byte
	if _, err := io.ReadFull(r.r, h[:]); err != nil {
		r.corrupt("short block header: %v", err)
		return r.err
	}
	dlen := binary.LittleEndian.Uint32(h[0:])
	n := binary.LittleEndian.Uint32(h[4:])
	if n == 0 || n > blockKeys || uint64(n) > r.remaining || dlen > blockKeys*8+64*2 || int64(dlen) > r.size-r.read {
		r.corrupt("bad block header (len %d keys %d)", dlen, n)
		return r.err
	}
	if cap(r.buf) < int(dlen) {
		r.buf = make([]byte, dlen)
	}
	data := r.buf[:dlen]
	if _, err := io.ReadFull(r.r, data); err != nil {
		r.corrupt("short block: %v", err)
		return r.err
	}
	if crc32.Checksum(data, castagnoli) != binary.LittleEndian.Uint32(h[8:]) {
		r.corrupt("block checksum mismatch at offset %d", r.read)
		return r.err
	}
	r.read += blockHdrSize + int64(dlen)
	r.block = r.block[:0]
	var err error
	if r.compressed() {
		r.block, err = riceDecode(r.block, data, int(n))
	} else if int(dlen) != 8*int(n) {
		err = fmt.Errorf("length %d for %d keys", dlen, n)
	} else {
		for i := 0; i < int(n); i++ {
			r.block = append(r.block, binary.LittleEndian.Uint64(data[8*i:]))
		}
	}
	if err != nil {
		r.corrupt("block decode: %v", err)
		return r.err
	}
	prev, started := r.last, r.started
	for _, v := range r.block {
		if started && v <= prev {
			r.corrupt("hashes out of order")
			return r.err
		}
		prev, started = v, true
	}
	r.last, r.started = prev, true
	r.remaining -= uint64(n)
	r.pos = 0
	return nil
}

func (r *storeReader) compressed() bool { return r.flags&flagCompressed != 0 }

// close closes the file and gives the reader's buffers back.
func (r *storeReader) close() {
	r.f.Close()
	if r.r != nil {
		r.bufs.put(nil, r.r, r.block, r.buf)
		r.r, r.block, r.buf = nil, nil, nil
	}
}

// verifyStore reads a whole store file, checking every block.
func verifyStore(path string, bucket int, meta bucketMeta) error {
	r, err := openStore(path, bucket, meta, nil)
	if err != nil {
		return err
	}
	defer r.close()
	for {
		if _, ok := r.next(); !ok {
			return r.err
		}
	}
}

// riceEncode appends the compressed form of the strictly increasing hs.
func riceEncode(dst []byte, hs []uint64) []byte {
	dst = binary.LittleEndian.AppendUint64(dst, hs[0])
	k := uint(0)
	if len(hs) > 1 {
		mean := (hs[len(hs)-1] - hs[0]) / uint64(len(hs)-1)
		if m := mean / 100 * 69; m > 0 {
			k = uint(bits.Len64(m) - 1)
		}
	}
	dst = append(dst, byte(k))
	var bw bitWriter
	bw.buf = dst
	for i := 1; i < len(hs); i++ {
		g := hs[i] - hs[i-1]
		q := g >> k
		if q >= 64 {
			bw.write(^uint64(0), 64)
			bw.write(g, 64)
			continue
		}
		// q ones then a zero.
		bw.write((uint64(1)<<q)-1, uint(q)+1)
		bw.write(g, k)
	}
	return bw.flush()
}

func riceDecode(dst []uint64, data []byte, n int) ([]uint64, error) {
	if len(data) < 9 {
		return dst, fmt.Errorf("short compressed block")
	}
	v := binary.LittleEndian.Uint64(data)
	k := uint(data[8])
	if k > 63 {
		return dst, fmt.Errorf("bad rice parameter %d", k)
	}
	dst = append(dst, v)
	br := bitReader{buf: data[9:]}
	for i := 1; i < n; i++ {
		q := br.unary()
		var g uint64
		if q >= 64 {
			g = br.read(64)
		} else {
			g = q<<k | br.read(k)
		}
		if br.bad || g == 0 {
			return dst, fmt.Errorf("bad compressed data")
		}
		v += g
		dst = append(dst, v)
	}
	return dst, nil
}

type bitWriter struct {
	buf   []byte
	acc   uint64
	nbits uint
}

// write appends the low n bits of v (n ≤ 64), LSB first.
func (w *bitWriter) write(v uint64, n uint) {
	for n > 0 {
		take := min(n, 64-w.nbits, 32)
		w.acc |= (v & (1<<take - 1)) << w.nbits
		w.nbits += take
		v >>= take
		n -= take
		for w.nbits >= 8 {
			w.buf = append(w.buf, byte(w.acc))
			w.acc >>= 8
			w.nbits -= 8
		}
	}
}

func (w *bitWriter) flush() []byte {
	if w.nbits > 0 {
		w.buf = append(w.buf, byte(w.acc))
	}
	w.acc, w.nbits = 0, 0
	return w.buf
}

type bitReader struct {
	buf   []byte
	pos   int // next byte of buf to load
	acc   uint64
	nbits uint
	bad   bool
}

func (r *bitReader) refill() {
	for r.nbits <= 56 && r.pos < len(r.buf) {
		r.acc |= uint64(r.buf[r.pos]) << r.nbits
		r.pos++
		r.nbits += 8
	}
}

func (r *bitReader) read(n uint) uint64 {
	var v uint64
	var got uint
	for n > 0 {
		if r.nbits == 0 {
			r.refill()
			if r.nbits == 0 {
				r.bad = true
				return v
			}
		}
		take := min(n, r.nbits, 32)
		v |= (r.acc & (1<<take - 1)) << got
		r.acc >>= take
		r.nbits -= take
		got += take
		n -= take
	}
	return v
}

// unary counts ones up to the terminating zero, stopping at 64.
func (r *bitReader) unary() uint64 {
	var q uint64
	for q < 64 {
		if r.nbits == 0 {
			r.refill()
			if r.nbits == 0 {
				r.bad = true
				return q
			}
		}
		ones := uint(bits.TrailingZeros64(^r.acc))
		if ones > r.nbits {
			ones = r.nbits
		}
		if uint64(ones) > 64-q {
			ones = uint(64 - q)
		}
		q += uint64(ones)
		r.acc >>= ones
		r.nbits -= ones
		if q == 64 {
			return q
		}
		if r.nbits > 0 {
			r.acc >>= 1
			r.nbits--
			return q
		}
	}
	return q
}
