package cluster

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"sync"

	"github.com/petrel-crawler/petrel/internal/atomicfile"
	"github.com/petrel-crawler/petrel/internal/framelog"
)

// Inbox is the receiver's durable log of batches. The exchange
// acknowledges a batch only once Append has returned, i.e. once the batch
// is fsynced here; the agent applies batches in log order and, at crash
// recovery, replays the log from the position its checkpoint recorded. A
// segment is removed only when a checkpoint covers all of it (Trim).
//
// The log is a run of segment files named by the log position of their
// first byte (framelog.SegmentPath), without a header. Each holds frames
// (package framelog) whose body is a batch's wire form. A frame is
// durable once Append returns; a torn frame at the end of the last
// segment (a crash during a write) is cut at Open. Positions are byte
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
	w       *framelog.Writer // its Cond: durable moved, or the inbox closed
	segs    []int64          // first positions of the segments, ascending
	trimmed int64            // first position still held (segs[0])
	closed  bool
	err     error // sticky write failure
}

// ErrFull is returned by Append when the inbox holds Limit bytes.
var ErrFull = errors.New("cluster: inbox full")

// ErrClosed is returned after Close.
var ErrClosed = errors.New("cluster: closed")

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
	in.w = framelog.NewWriter(&in.mu, (*os.File).Sync)
	nums, err := framelog.Segments(dir)
	if err != nil {
		return nil, fmt.Errorf("cluster: inbox: %w", err)
	}
	for _, p := range nums {
		if p <= math.MaxInt64 {
			in.segs = append(in.segs, int64(p))
		}
	}
	if len(in.segs) == 0 {
		in.segs = []int64{0}
	}
	last := in.segs[len(in.segs)-1]
	_, good, _, err := framelog.Scan(in.segPath(last), "", 0, MaxBatchBytes, nil)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("cluster: inbox: %w", err)
	}
	if err := in.w.Open(in.segPath(last), good, last+good); err != nil {
		return nil, fmt.Errorf("cluster: inbox: %w", err)
	}
	in.trimmed = in.segs[0]
	return in, atomicfile.SyncDir(dir)
}

func (in *Inbox) segPath(p int64) string { return framelog.SegmentPath(in.dir, uint64(p)) }

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
	if in.err == nil && in.w.End()-in.segs[len(in.segs)-1] >= in.segSize {
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
	if in.w.End()-in.trimmed+int64(len(wire)) > in.limit {
		return 0, ErrFull
	}
	var h [framelog.HeaderLen]byte
	framelog.PutHeader(h[:], wire)
	start := in.w.End()
	if _, err := in.w.Write(h[:], wire); err != nil {
		in.err = fmt.Errorf("cluster: inbox: %w", err)
		return 0, in.err
	}
	mine := in.w.End()
	if written != nil {
		written(start, mine)
	}
	if err := in.w.Wait(mine); err != nil {
		return 0, fmt.Errorf("cluster: inbox: sync: %w", err)
	}
	return mine, nil
}

// rollLocked starts a new segment at the log's end, unless another append
// rolled the log while this one waited for the fsync under way.
func (in *Inbox) rollLocked() error {
	in.w.Settle()
	if in.closed {
		return ErrClosed
	}
	end := in.w.End()
	if end-in.segs[len(in.segs)-1] < in.segSize {
		return nil
	}
	if err := in.w.SyncNow(); err != nil {
		return fmt.Errorf("cluster: inbox: sync: %w", err)
	}
	if err := in.w.Start(in.segPath(end), ""); err != nil {
		return fmt.Errorf("cluster: inbox: %w", err)
	}
	in.segs = append(in.segs, end)
	return nil
}

// Durable returns the position up to which the log is durable.
func (in *Inbox) Durable() int64 {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.w.Durable()
}

// Syncs returns how many fsyncs the inbox has made.
func (in *Inbox) Syncs() int64 { return in.w.Syncs() }

// Size returns the bytes held (not yet trimmed).
func (in *Inbox) Size() int64 {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.w.End() - in.trimmed
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
				in.w.Cond.Broadcast()
				in.mu.Unlock()
			case <-done:
			}
		}()
	}
	for in.w.Durable() <= from && !in.closed {
		select {
		case <-stop:
			return in.w.Durable()
		default:
		}
		in.w.Cond.Wait()
	}
	return in.w.Durable()
}

// Read calls fn with each durable batch from position from (a frame
// boundary that Append or Read returned) to the durable end, and the
// position after it; it stops at fn's first error.
func (in *Inbox) Read(from int64, fn func(wire []byte, next int64) error) error {
	in.mu.Lock()
	segs, durable := slices.Clone(in.segs), in.w.Durable()
	in.mu.Unlock()
	if from < segs[0] {
		return fmt.Errorf("cluster: inbox: position %d was trimmed (log starts at %d)", from, segs[0])
	}
	i, _ := slices.BinarySearch(segs, from+1)
	i-- // the segment holding from
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
		// (a frame larger than it is read straight into the body).
		r := framelog.NewReader(f, readBuffer, MaxBatchBytes)
		segEnd := durable
		if i+1 < len(segs) {
			segEnd = segs[i+1]
		}
		for pos < segEnd {
			b, err := r.Next()
			if err != nil {
				f.Close()
				return fmt.Errorf("cluster: inbox: at %d: %w", pos, err)
			}
			pos += int64(framelog.HeaderLen + len(b))
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
	in.w.Cond.Broadcast()
	return in.w.Close()
}
