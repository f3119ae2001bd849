package diskq

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/petrel-crawler/petrel/internal/atomicfile"
)

// A checkpoint of a Queues is a directory holding hard links to its sealed
// segment files and an index ("queues.index", the format Close writes)
// that lists exactly those segments. Segments are append-only and, once the
// writer has left them, never written again: compaction copies live
// records forward into the current segment and deletes (unlinks) the
// segments it emptied, so a link taken by a checkpoint keeps the bytes the
// checkpoint's index points to, whatever the live queues do afterwards.
// A checkpoint therefore costs a link per segment and the index (a few
// bytes per queued record), not a copy of the records.

// Checkpoint starts a checkpoint of every queue in dir, which it creates:
// the records held in RAM are sealed into blocks, the current segment is
// sealed (the next record starts a new one) unless
// it holds no record, every sealed segment is hard-linked into dir, and
// the index of the queues over those segments is taken, sharing the
// queues' position lists (copy on write) rather than copying them: its
// cost follows the segments and the queues, not the records. The returned
// finish writes the index to dir and fsyncs dir's files and dir; call it
// once, from any goroutine, when the caller's pause is over: the
// checkpoint is complete when it returns nil. OpenCheckpoint reads it.
func (m *Queues) Checkpoint(dir string) (finish func() error, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, ErrClosed
	}
	if err := m.sealLocked(); err != nil {
		return nil, fmt.Errorf("diskq: checkpoint: %w", err)
	}
	if m.cur().size > segHeaderSize {
		if err := m.rollLocked(); err != nil {
			return nil, fmt.Errorf("diskq: checkpoint: %w", err)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("diskq: checkpoint: %w", err)
	}
	sealed := m.segs[:len(m.segs)-1] // the current segment is empty
	for _, s := range sealed {
		if err := os.Link(m.segPath(s.seq), filepath.Join(dir, segName(s.seq, queuesExt))); err != nil {
			return nil, fmt.Errorf("diskq: checkpoint: %w", err)
		}
	}
	x := m.snapIndexLocked(sealed, true)
	fsync := m.opts.fsyncFile
	return func() error {
		if err := atomicfile.Write(filepath.Join(dir, queuesIndexName), atomicfile.Options{Buffer: 1 << 20}, x.writeTo); err != nil {
			return fmt.Errorf("diskq: checkpoint index: %w", err)
		}
		return syncDirFiles(dir, fsync)
	}, nil
}

// QueuesCheckpoint is a checkpoint written by Queues.Checkpoint, opened
// read-only: it never changes the files of the directory.
type QueuesCheckpoint struct {
	m *Queues
}

// OpenCheckpoint opens the checkpoint in dir. A missing index, a segment
// missing, extra or of another size than the index says, is an error
// wrapping ErrCorrupt.
func OpenCheckpoint(dir string, opts Options) (*QueuesCheckpoint, error) {
	opts = opts.withDefaults()
	m := &Queues{dir: dir, opts: opts, log: opts.Logger, ids: make(map[uint64]*idq)}
	seqs, err := listSegments(dir, queuesExt)
	if err != nil {
		return nil, err
	}
	if m.codec, err = newBlockCodec(); err != nil {
		return nil, err
	}
	var rec Recovery
	for _, seq := range seqs {
		f, size, base, err := openSegment(dir, queuesExt, magicQueues, seq, false, &rec)
		if err != nil {
			m.closeFiles()
			return nil, err
		}
		m.segs = append(m.segs, &mseg{seq: seq, base: base, size: size, f: f})
	}
	loaded, err := m.loadIndex()
	if err == nil && !loaded {
		err = fmt.Errorf("diskq: checkpoint %s: no index: %w", dir, ErrCorrupt)
	}
	if err != nil {
		m.closeFiles()
		return nil, err
	}
	return &QueuesCheckpoint{m: m}, nil
}

// Count returns the number of records of queue id in the checkpoint.
func (c *QueuesCheckpoint) Count(id uint64) int64 {
	if q := c.m.ids[id]; q != nil {
		return q.n
	}
	return 0
}

// Total returns the number of records in the checkpoint.
func (c *QueuesCheckpoint) Total() int64 { return c.m.total }

// Snapshot calls fn for every record of the checkpoint, as
// Queues.Snapshot does (in file order, sequential reads).
func (c *QueuesCheckpoint) Snapshot(fn func(id uint64, rec []byte) error) error {
	if c.m.closed {
		return ErrClosed
	}
	return c.m.snapshotLocked(fn)
}

// Close closes the checkpoint's files.
func (c *QueuesCheckpoint) Close() error {
	if c.m.closed {
		return ErrClosed
	}
	c.m.closed = true
	c.m.closeFiles()
	return nil
}

// syncDirFiles fsyncs every file of dir, then dir itself.
func syncDirFiles(dir string, fsync func(*os.File) error) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("diskq: sync %s: %w", dir, err)
	}
	for _, e := range ents {
		f, err := os.Open(filepath.Join(dir, e.Name()))
		if err != nil {
			return fmt.Errorf("diskq: sync %s: %w", dir, err)
		}
		err = fsync(f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("diskq: sync %s: %w", filepath.Join(dir, e.Name()), err)
		}
	}
	return syncDir(dir, fsync)
}
