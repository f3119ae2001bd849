package diskq

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/petrel-crawler/petrel/internal/atomicfile"
)

// On-disk format shared by Queue and Queues. All integers are little endian.
//
// Segment file header (segHeaderSize = 32 bytes):
//
//	[0:8)   magic      "petrelQ1" (Queue) or "petrelM1" (Queues)
//	[8:12)  version    uint32: Queue 2 (queueFormat), Queues 1 (queuesFormat)
//	[12:20) seq        uint64, the segment number; equals the number in the file name
//	[20:28) base       uint64, Queues: logical position of byte 0 of this file; Queue: 0
//	[28:32) crc        uint32, CRC-32C of bytes [0:28)
//
// Queue, version 2: the segment holds blocks of records, each compressed
// as a whole (block.go). Version 1 held one record after another,
// [len uint32][crc uint32][len bytes of data]; a Queue refuses a version 1
// segment or queue.meta with ErrOldFormat.
//
// Queues, version 2: the segment holds blocks of the same layout (block.go),
// each record of a block being (uvarint id, data); records of one id are
// sealed next to each other (queues_blocks.go). Version 1 held one record
// after another, [id uint64][len uint32][crc uint32][len bytes of data]; a
// Queues refuses a version 1 segment or queues.index with ErrOldFormat.
//
// Segment files are append-only; only the last segment of a directory can
// legitimately end in an invalid block (a torn write from a crash).
// Recovery cuts such a tail at the last valid block and reports it; an
// invalid block anywhere else is corruption and is reported as ErrCorrupt,
// never skipped.

const (
	segHeaderSize = 32
	queueFormat   = 2 // Queue: segments of compressed blocks, queue.meta with Position version 2
	queuesFormat  = 2 // Queues: segments of compressed blocks of runs of ids, queues.index version 2

	// MaxRecordBytes is the largest record either queue type accepts.
	MaxRecordBytes = 64 << 20

	defaultSegmentBytes = 64 << 20
	defaultBufferBytes  = 1 << 20
	minSegmentBytes     = 4 << 10
	minBufferBytes      = 4 << 10
)

var (
	magicQueue  = [8]byte{'p', 'e', 't', 'r', 'e', 'l', 'Q', '1'}
	magicQueues = [8]byte{'p', 'e', 't', 'r', 'e', 'l', 'M', '1'}

	castagnoli = crc32.MakeTable(crc32.Castagnoli)
)

// ErrCorrupt is returned (wrapped, with the file and offset) when stored data
// fails validation: a bad magic, version or checksum, or a truncated record
// where none may be.
var ErrCorrupt = errors.New("diskq: corrupt data")

// ErrOldFormat is returned (wrapped, with the file) when a queue's files
// were written in an earlier format version that this version does not
// read: version 1 of Queue and of Queues, whose records were not compressed.
var ErrOldFormat = errors.New("diskq: written in an earlier format (by an earlier Petrel), which this version does not read")

// ErrClosed is returned by operations on a closed queue.
var ErrClosed = errors.New("diskq: queue closed")

// ErrTooLarge is returned by Push and Enqueue for records longer than MaxRecordBytes.
var ErrTooLarge = errors.New("diskq: record too large")

// Options configures a Queue or a Queues. The zero value is usable: sizes
// take their defaults and Sync is off. Production callers should start from
// DefaultOptions, which turns Sync on.
type Options struct {
	// SegmentBytes is the size after which writing rolls over to a new
	// segment file (default 64 MiB). Consumed segments are deleted.
	SegmentBytes int64
	// BufferBytes is the size of the write buffer and of the read-ahead
	// buffer (default 1 MiB each).
	BufferBytes int
	// Sync makes Sync, Mark, Close and segment roll-over call fsync on the
	// files and the directory. Without it data reaches the OS page cache
	// only, which survives a process crash but not a power loss.
	Sync bool
	// Logger receives recovery reports (torn tails cut, index rebuilt).
	// Nil means slog.Default().
	Logger *slog.Logger

	// fsyncFile is the package's one fsync (segments, state files and
	// directories); nil means (*os.File).Sync. Tests set it to trace the
	// sync points.
	fsyncFile func(*os.File) error
}

// syncer returns the fsync to call on files and directories: nil without
// Options.Sync.
func (o Options) syncer() func(*os.File) error {
	if !o.Sync {
		return nil
	}
	return o.fsyncFile
}

// DefaultOptions returns the options recommended for production: default
// sizes and Sync on.
func DefaultOptions() Options {
	return Options{SegmentBytes: defaultSegmentBytes, BufferBytes: defaultBufferBytes, Sync: true}
}

func (o Options) withDefaults() Options {
	if o.SegmentBytes <= 0 {
		o.SegmentBytes = defaultSegmentBytes
	}
	if o.SegmentBytes < minSegmentBytes {
		o.SegmentBytes = minSegmentBytes
	}
	if o.BufferBytes <= 0 {
		o.BufferBytes = defaultBufferBytes
	}
	if o.BufferBytes < minBufferBytes {
		o.BufferBytes = minBufferBytes
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.fsyncFile == nil {
		o.fsyncFile = (*os.File).Sync
	}
	return o
}

// Recovery describes what opening a queue had to repair. The zero value
// means the queue was closed cleanly and nothing was repaired.
type Recovery struct {
	// Dirty reports that the queue was not closed cleanly (a crash), or
	// that its files did not match the state recorded at Close.
	Dirty bool
	// CutSegment and CutOffset locate the start of the torn tail that was
	// removed; CutBytes is its length. CutBytes == 0 means nothing was cut.
	CutSegment uint64
	CutOffset  int64
	CutBytes   int64
	// Rebuilt reports (Queues only) that the index was rebuilt by scanning
	// the segment files; Records is the number of records found.
	Rebuilt bool
	Records int64
}

func crcOf(parts ...[]byte) uint32 {
	var c uint32
	for _, p := range parts {
		c = crc32.Update(c, castagnoli, p)
	}
	return c
}

// segVersion is the format version of the segments with magic.
func segVersion(magic [8]byte) uint32 {
	if magic == magicQueue {
		return queueFormat
	}
	return queuesFormat
}

func encodeSegHeader(magic [8]byte, seq, base uint64) []byte {
	b := make([]byte, segHeaderSize)
	copy(b, magic[:])
	binary.LittleEndian.PutUint32(b[8:], segVersion(magic))
	binary.LittleEndian.PutUint64(b[12:], seq)
	binary.LittleEndian.PutUint64(b[20:], base)
	binary.LittleEndian.PutUint32(b[28:], crcOf(b[:28]))
	return b
}

// readSegHeader validates the header of the segment file path and returns
// its base. Errors wrap ErrCorrupt when the header is present but invalid,
// and io.ErrUnexpectedEOF when the file is shorter than a header.
func readSegHeader(f *os.File, path string, magic [8]byte, seq uint64) (base uint64, err error) {
	var b [segHeaderSize]byte
	if _, err := f.ReadAt(b[:], 0); err != nil {
		if errors.Is(err, io.EOF) {
			return 0, fmt.Errorf("diskq: segment %s: short header: %w", path, io.ErrUnexpectedEOF)
		}
		return 0, fmt.Errorf("diskq: segment %s: read header: %w", path, err)
	}
	if [8]byte(b[:8]) != magic {
		return 0, fmt.Errorf("diskq: segment %s: bad magic %q: %w", path, b[:8], ErrCorrupt)
	}
	if crcOf(b[:28]) != binary.LittleEndian.Uint32(b[28:]) {
		return 0, fmt.Errorf("diskq: segment %s: header checksum mismatch: %w", path, ErrCorrupt)
	}
	if v, want := binary.LittleEndian.Uint32(b[8:]), segVersion(magic); v != want {
		if v < want {
			return 0, fmt.Errorf("diskq: segment %s: format version %d, this version reads %d: %w", path, v, want, ErrOldFormat)
		}
		return 0, fmt.Errorf("diskq: segment %s: unsupported version %d: %w", path, v, ErrCorrupt)
	}
	if s := binary.LittleEndian.Uint64(b[12:]); s != seq {
		return 0, fmt.Errorf("diskq: segment %s: header says segment %d: %w", path, s, ErrCorrupt)
	}
	return binary.LittleEndian.Uint64(b[20:]), nil
}

// openSegment opens segment seq of dir for reading, checks its header and
// returns the file, its size and the base in its header. The last segment
// of a directory (last) may be shorter than its header, left by a crash
// while it was created: it is removed and noted in rec, and the file
// returned is nil.
func openSegment(dir, ext string, magic [8]byte, seq uint64, last bool, rec *Recovery) (f *os.File, size int64, base uint64, err error) {
	path := filepath.Join(dir, segName(seq, ext))
	f, err = os.Open(path)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("diskq: open segment: %w", err)
	}
	st, err := f.Stat()
	if err == nil {
		base, err = readSegHeader(f, path, magic, seq)
	}
	if err != nil {
		f.Close()
		if last && errors.Is(err, io.ErrUnexpectedEOF) {
			rec.Dirty = true
			rec.CutSegment, rec.CutOffset, rec.CutBytes = seq, 0, st.Size()
			if err := os.Remove(path); err != nil {
				return nil, 0, 0, fmt.Errorf("diskq: remove torn segment: %w", err)
			}
			return nil, 0, 0, nil
		}
		return nil, 0, 0, err
	}
	return f, st.Size(), base, nil
}

// cutTornTail handles segment seq (file path, size bytes) whose valid
// records end at end < size: in the last segment of a directory (last)
// that is a torn write, cut off and noted in rec; elsewhere it is
// corruption.
func cutTornTail(path string, seq uint64, end, size int64, last bool, rec *Recovery) error {
	if !last {
		return fmt.Errorf("diskq: segment %s: invalid record at offset %d: %w", path, end, ErrCorrupt)
	}
	if err := os.Truncate(path, end); err != nil {
		return fmt.Errorf("diskq: cut torn tail: %w", err)
	}
	rec.CutSegment, rec.CutOffset, rec.CutBytes = seq, end, size-end
	return nil
}

func segName(seq uint64, ext string) string {
	return fmt.Sprintf("%016x%s", seq, ext)
}

// listSegments returns the sequence numbers of the segment files with the
// given extension in dir, in increasing order.
func listSegments(dir, ext string) ([]uint64, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("diskq: list %s: %w", dir, err)
	}
	var seqs []uint64
	for _, e := range ents {
		name := e.Name()
		if !strings.HasSuffix(name, ext) || len(name) != 16+len(ext) {
			continue
		}
		seq, err := strconv.ParseUint(name[:16], 16, 64)
		if err != nil {
			continue
		}
		seqs = append(seqs, seq)
	}
	sort.Slice(seqs, func(i, j int) bool { return seqs[i] < seqs[j] })
	return seqs, nil
}

// syncDir fsyncs the directory dir with fsync.
func syncDir(dir string, fsync func(*os.File) error) error {
	if err := atomicfile.SyncDirWith(dir, fsync); err != nil {
		return fmt.Errorf("diskq: sync dir %s: %w", dir, err)
	}
	return nil
}

// writeFileAtomic writes data to dir/name through a temporary file and a
// rename, so a reader sees either the old or the new content, never a mix.
// With fsync (nil: none) the file and then the directory are synced.
func writeFileAtomic(dir, name string, data []byte, fsync func(*os.File) error) error {
	opts := atomicfile.Options{Sync: fsync != nil, SyncDir: fsync != nil, Fsync: fsync}
	if err := atomicfile.WriteBytes(filepath.Join(dir, name), data, opts); err != nil {
		return fmt.Errorf("diskq: write %s: %w", name, err)
	}
	return nil
}
