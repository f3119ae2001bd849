package diskq

// segmentWriter appends to the last segment file of a directory, the only
// one ever written, for both Queue (".dq") and Queues (".mq"). Both write
// whole compressed blocks (block.go) with write; the owner buffers the
// records of a block until it seals it. The writer owns the creation of new
// segment files and their fsync. When to roll over, and what becomes of the
// old file, are up to its owner.
//
// Invariants:
//
//   - The logical size of the current segment (qseg.size, mseg.size, kept
//     by the owner) is always flushed: every byte written has been handed
//     to the OS with WriteAt, as far as a process crash goes, not a power
//     loss. Blocks are only ever appended at that end, each with one
//     WriteAt.
//   - sync fsyncs the segment file with Options.Sync; it is the writer's
//     only fsync, called by Queue's Sync, Mark and Close, Queues' Sync and
//     Close, and at every roll-over, on the segment left. The writer never
//     fsyncs the directory: Queue does at its next metadata write after a
//     segment was created or removed, Queues when opened and when Close
//     writes its index.
//   - start creates the next segment with O_EXCL and writes its 32-byte
//     header (format.go) at once, before any block, without fsync.
//
// What a crash can leave behind, all in the last segment only: a block
// cut anywhere (a torn last block); a segment being created can be shorter
// than its header. Opening after a crash cuts a torn block and removes a
// segment with a short header, and reports it (Recovery). A failed write
// leaves flushed as it was: the next write goes to the same offset, over
// whatever part of the failed one reached the file.

import (
	"fmt"
	"os"
	"path/filepath"
)

type segmentWriter struct {
	dir      string
	ext      string               // segment file extension: queueExt or queuesExt
	magic    [8]byte              // segment magic: magicQueue or magicQueues
	segBytes int64                // Options.SegmentBytes
	fsync    func(*os.File) error // Options.syncer(): nil without Options.Sync

	f       *os.File // the current segment, nil when closed or between roll-over steps
	buf     []byte   // bytes not yet written; always empty (blocks are written whole)
	flushed int64    // bytes of the current segment already in the file
}

func newSegmentWriter(dir, ext string, magic [8]byte, opts Options) segmentWriter {
	return segmentWriter{
		dir: dir, ext: ext, magic: magic,
		segBytes: opts.SegmentBytes, fsync: opts.syncer(),
	}
}

// full reports whether a record of sz bytes (header included) must go to a
// new segment: the current one, of size bytes (the owner's count),
// holds a record already and would outgrow Options.SegmentBytes. A
// record larger than a segment gets one to itself.
func (w *segmentWriter) full(size, sz int64) bool {
	return size > segHeaderSize && size+sz > w.segBytes
}

// start creates segment seq, with base in its header, holding only the
// header, and makes it the current segment. The previous file must have
// been sealed (sync) and let go of by the owner.
func (w *segmentWriter) start(seq, base uint64) error {
	path := filepath.Join(w.dir, segName(seq, w.ext))
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o644)
	if err != nil {
		return fmt.Errorf("diskq: create segment: %w", err)
	}
	if _, err := f.WriteAt(encodeSegHeader(w.magic, seq, base), 0); err != nil {
		f.Close()
		return fmt.Errorf("diskq: create segment %s: %w", path, err)
	}
	w.f, w.flushed = f, segHeaderSize
	return nil
}

// open makes the existing segment seq, of size bytes, the current segment,
// to append to after Open.
func (w *segmentWriter) open(seq uint64, size int64) error {
	f, err := os.OpenFile(filepath.Join(w.dir, segName(seq, w.ext)), os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("diskq: open writer: %w", err)
	}
	w.f, w.flushed = f, size
	return nil
}

// write appends b, a whole Queue block, to the current segment at once,
// after whatever the buffer holds. op names the operation in errors.
func (w *segmentWriter) write(b []byte, op string) error {
	if err := w.flush(); err != nil {
		return err
	}
	if _, err := w.f.WriteAt(b, w.flushed); err != nil {
		return fmt.Errorf("diskq: %s: %w", op, err)
	}
	w.flushed += int64(len(b))
	return nil
}

// flush writes the buffer to the file.
func (w *segmentWriter) flush() error {
	if len(w.buf) == 0 {
		return nil
	}
	if _, err := w.f.WriteAt(w.buf, w.flushed); err != nil {
		return fmt.Errorf("diskq: flush: %w", err)
	}
	w.flushed += int64(len(w.buf))
	w.buf = w.buf[:0]
	return nil
}

// sync flushes the buffer and, with Options.Sync, fsyncs the current
// segment. op names the operation in errors: "sync", or "roll" when the
// segment is sealed before a roll-over.
func (w *segmentWriter) sync(op string) error {
	if err := w.flush(); err != nil {
		return err
	}
	if w.fsync != nil {
		if err := w.fsync(w.f); err != nil {
			return fmt.Errorf("diskq: %s: %w", op, err)
		}
	}
	return nil
}

// close closes the current segment file, if any, without flushing.
func (w *segmentWriter) close() {
	if w.f != nil {
		w.f.Close()
		w.f = nil
	}
}
