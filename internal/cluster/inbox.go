package cluster

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/petrel-crawler/petrel/internal/atomicfile"
)

// Inbox is the receiver's durable log of batches. The exchange
// acknowledges a batch only once Append has returned, i.e. once the batch
// is fsynced here; the agent applies batches in log order and, at crash
// recovery, replays the log from the position its checkpoint recorded. A
// segment is removed only when a checkpoint covers all of it (Trim).
//
// The log is a run of segment files named by the log position of their
// first byte (20 decimal digits, ".log"). Each holds frames:
//
//	uint32 length of the batch (little endian)
//	uint32 CRC-32C of the batch
//	the batch's wire form
//
// A frame is durable once Append returns; a torn frame at the end of the
// last segment (a crash during a write) is cut at Open. Positions are byte
// offsets in the concatenation of all segments ever written, so a position
// stays valid across trims.
//
// When the bytes not yet trimmed reach Limit, Append fails with ErrFull:
// the exchange then stops acknowledging and senders wait.
type Inbox struct {
	dir     string
	limit   int64
	segSize int64

	mu      sync.Mutex
	gc      groupCommit // its cond: durable moved, or the inbox closed
	f       *os.File    // last segment, open for appending
	segs    []int64     // first positions of the segments, ascending
	end     int64       // position after the last byte written
	trimmed int64       // first position still held (segs[0])
	closed  bool
	err     error        // sticky write failure
	syncs   atomic.Int64 // fsyncs done
}

// ErrFull is returned by Append when the inbox holds Limit bytes.
var ErrFull = errors.New("cluster: inbox full")

// ErrClosed is returned after Close.
var ErrClosed = errors.New("cluster: closed")

const frameHeader = 8

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// OpenInbox opens (creating) the inbox in dir. limit bounds its untrimmed
// bytes (0: 1 GiB).
func OpenInbox(dir string, limit int64) (*Inbox, error) {
	if limit <= 0 {
		limit = 1 << 30
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("cluster: inbox: %w", err)
	}
	// Segments are small against the limit, so that trimming frees room.
	in := &Inbox{dir: dir, limit: limit, segSize: min(64<<20, limit/8)}
	in.gc = newGroupCommit(&in.mu)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("cluster: inbox: %w", err)
	}
	for _, e := range ents {
		if p, ok := segmentNum(e.Name()); ok && p <= math.MaxInt64 {
			in.segs = append(in.segs, int64(p))
		}
	}
	slices.Sort(in.segs)
	if len(in.segs) == 0 {
		in.segs = []int64{0}
	}
	last := in.segs[len(in.segs)-1]
	good, err := validPrefix(in.segPath(last))
	if err != nil {
		return nil, err
	}
	in.f, err = os.OpenFile(in.segPath(last), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("cluster: inbox: %w", err)
	}
	if err := in.f.Truncate(good); err != nil {
		in.f.Close()
		return nil, fmt.Errorf("cluster: inbox: cut torn frame: %w", err)
	}
	if _, err := in.f.Seek(good, io.SeekStart); err != nil {
		in.f.Close()
		return nil, err
	}
	in.end = last + good
	in.gc.durable = in.end
	in.trimmed = in.segs[0]
	return in, atomicfile.SyncDir(dir)
}

func (in *Inbox) segPath(p int64) string { return segmentPath(in.dir, uint64(p)) }

// validPrefix returns the length of the whole frames at the start of the
// file at path (0 if it does not exist).
func validPrefix(path string) (int64, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("cluster: inbox: %w", err)
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<20)
	var off int64
	for {
		b, err := readFrame(r, nil)
		if err != nil {
			return off, nil
		}
		off += int64(frameHeader + len(b))
	}
}

// readFrame reads one frame's batch into buf (grown as needed); io.EOF at a
// clean end, another error for a torn or corrupt frame.
func readFrame(r io.Reader, buf []byte) ([]byte, error) {
	var h [frameHeader]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, errTorn
		}
		return nil, err
	}
	n := binary.LittleEndian.Uint32(h[:4])
	if n > MaxBatchBytes {
		return nil, errTorn
	}
	buf = slices.Grow(buf[:0], int(n))[:n]
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, errTorn
	}
	if crc32.Checksum(buf, castagnoli) != binary.LittleEndian.Uint32(h[4:]) {
		return nil, errTorn
	}
	return buf, nil
}

var errTorn = errors.New("cluster: inbox: torn or corrupt frame")

// readBuffer is Read's buffer size.
const readBuffer = 64 << 10

// Append writes a batch and returns once it is durable, with the position
// after it. Appends running at once share one fsync (group commit).
func (in *Inbox) Append(wire []byte) (int64, error) { return in.AppendNotify(wire, nil) }

// AppendNotify is Append, calling written (if not nil) with the frame's
// first position and the one after it once the frame is written and
// before it is durable — before anyone waiting for the durable position
// can see it.
func (in *Inbox) AppendNotify(wire []byte, written func(start, next int64)) (int64, error) {
	if len(wire) > MaxBatchBytes {
		return 0, errBadBatch
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.closed {
		return 0, ErrClosed
	}
	if in.err == nil && in.end-in.segs[len(in.segs)-1] >= in.segSize {
		if err := in.rollLocked(); err != nil {
			if !errors.Is(err, ErrClosed) {
				in.err = err
			}
			return 0, err
		}
	}
	if in.err != nil {
		return 0, in.err
	}
	if in.end-in.trimmed+int64(len(wire)) > in.limit {
		return 0, ErrFull
	}
	var h [frameHeader]byte
	binary.LittleEndian.PutUint32(h[:4], uint32(len(wire)))
	binary.LittleEndian.PutUint32(h[4:], crc32.Checksum(wire, castagnoli))
	if _, err := in.f.Write(h[:]); err != nil {
		in.err = fmt.Errorf("cluster: inbox: %w", err)
		return 0, in.err
	}
	if _, err := in.f.Write(wire); err != nil {
		in.err = fmt.Errorf("cluster: inbox: %w", err)
		return 0, in.err
	}
	in.end += int64(frameHeader + len(wire))
	mine := in.end
	if written != nil {
		written(mine-int64(frameHeader+len(wire)), mine)
	}
	if err := in.gc.wait(&in.mu, mine, func() (*os.File, int64) { return in.f, in.end }, in.fsync); err != nil {
		return 0, fmt.Errorf("cluster: inbox: sync: %w", err)
	}
	return mine, nil
}

func (in *Inbox) fsync(f *os.File) error {
	in.syncs.Add(1)
	return f.Sync()
}

// rollLocked starts a new segment at in.end, unless another append
// rolled the log while this one waited for the fsync under way.
func (in *Inbox) rollLocked() error {
	in.gc.settle()
	if in.closed {
		return ErrClosed
	}
	if in.end-in.segs[len(in.segs)-1] < in.segSize {
		return nil
	}
	if err := in.gc.syncNow(in.f, in.end, in.fsync); err != nil {
		return fmt.Errorf("cluster: inbox: sync: %w", err)
	}
	in.f.Close()
	f, err := os.OpenFile(in.segPath(in.end), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("cluster: inbox: %w", err)
	}
	in.f = f
	in.segs = append(in.segs, in.end)
	return atomicfile.SyncDir(in.dir)
}

// Durable returns the position up to which the log is durable.
func (in *Inbox) Durable() int64 {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.gc.durable
}

// Syncs returns how many fsyncs the inbox has made.
func (in *Inbox) Syncs() int64 { return in.syncs.Load() }

// Size returns the bytes held (not yet trimmed).
func (in *Inbox) Size() int64 {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.end - in.trimmed
}

// Wait blocks until the durable position passes from or the inbox closes,
// and returns the durable position.
func (in *Inbox) Wait(from int64, stop <-chan struct{}) int64 {
	in.mu.Lock()
	defer in.mu.Unlock()
	if stop != nil {
		done := make(chan struct{})
		defer close(done)
		go func() {
			select {
			case <-stop:
				in.mu.Lock()
				in.gc.cond.Broadcast()
				in.mu.Unlock()
			case <-done:
			}
		}()
	}
	for in.gc.durable <= from && !in.closed {
		select {
		case <-stop:
			return in.gc.durable
		default:
		}
		in.gc.cond.Wait()
	}
	return in.gc.durable
}

// Read calls fn with each durable batch from position from (a frame
// boundary that Append or Read returned) to the durable end, and the
// position after it; it stops at fn's first error.
func (in *Inbox) Read(from int64, fn func(wire []byte, next int64) error) error {
	in.mu.Lock()
	segs, durable := slices.Clone(in.segs), in.gc.durable
	in.mu.Unlock()
	if from < segs[0] {
		return fmt.Errorf("cluster: inbox: position %d was trimmed (log starts at %d)", from, segs[0])
	}
	i, _ := slices.BinarySearch(segs, from+1)
	i-- // the segment holding from
	var buf []byte
	for pos := from; pos < durable; i++ {
		if i >= len(segs) {
			return fmt.Errorf("cluster: inbox: position %d beyond the log", pos)
		}
		f, err := os.Open(in.segPath(segs[i]))
		if err != nil {
			return fmt.Errorf("cluster: inbox: %w", err)
		}
		if _, err := f.Seek(pos-segs[i], io.SeekStart); err != nil {
			f.Close()
			return err
		}
		// The applier reads a few batches at each wake: a small buffer
		// (a frame larger than it is read straight into buf).
		r := bufio.NewReaderSize(f, readBuffer)
		segEnd := durable
		if i+1 < len(segs) {
			segEnd = segs[i+1]
		}
		for pos < segEnd {
			b, err := readFrame(r, buf)
			if err != nil {
				f.Close()
				return fmt.Errorf("cluster: inbox: at %d: %w", pos, err)
			}
			buf = b
			pos += int64(frameHeader + len(b))
			if err := fn(b, pos); err != nil {
				f.Close()
				return err
			}
		}
		f.Close()
	}
	return nil
}

// Trim removes the segments that end at or before pos (a position a
// checkpoint covers).
func (in *Inbox) Trim(pos int64) error {
	in.mu.Lock()
	var drop []int64
	for len(in.segs) > 1 && in.segs[1] <= pos {
		drop = append(drop, in.segs[0])
		in.segs = in.segs[1:]
	}
	in.trimmed = in.segs[0]
	in.mu.Unlock()
	for _, p := range drop {
		if err := os.Remove(in.segPath(p)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("cluster: inbox: trim: %w", err)
		}
	}
	if len(drop) > 0 {
		return atomicfile.SyncDir(in.dir)
	}
	return nil
}

// Close syncs and closes the log.
func (in *Inbox) Close() error {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.closed {
		return nil
	}
	in.closed = true
	in.gc.cond.Broadcast()
	err := in.gc.syncNow(in.f, in.end, in.fsync)
	if cerr := in.f.Close(); err == nil {
		err = cerr
	}
	return err
}
