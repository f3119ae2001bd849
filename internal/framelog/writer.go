package framelog

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/petrel-crawler/petrel/internal/atomicfile"
)

// Writer appends frames to a log's head file and makes them durable, the
// writers of the log sharing fsyncs (group commit): a writer that needs
// its frames durable either leads an fsync of everything written so far
// or waits for the one under way, which may cover it. Positions (End)
// grow by the bytes of each write. Its methods are called with the log's
// mutex held (NewWriter's), which Wait and Settle release while they wait.
// A failed fsync is sticky: after it no frame is reported durable again
// (an fsync that failed once may have dropped the dirty pages).
type Writer struct {
	Cond  *sync.Cond // broadcast when an fsync ends; the log may use it for its own changes
	fsync func(*os.File) error
	syncs atomic.Int64 // fsyncs done, of files and of directories

	f             *os.File
	size, end     int64 // bytes in f; position after the last byte written
	durable       int64 // position up to which everything is fsynced
	syncing       bool  // a leader is fsyncing, without the lock
	werr, syncErr error // a write that could not be cut off again; the first failed fsync
}

// NewWriter returns a Writer without a head file (Open or Start gives it
// one), guarded by mu, fsyncing with fsync.
func NewWriter(mu *sync.Mutex, fsync func(*os.File) error) *Writer {
	w := &Writer{Cond: sync.NewCond(mu)}
	w.fsync = func(f *os.File) error { w.syncs.Add(1); return fsync(f) }
	return w
}

// Syncs returns the fsyncs the Writer has made (safe without the mutex).
func (w *Writer) Syncs() int64 { return w.syncs.Load() }

// Open makes the file at path (created if missing), whose first good
// bytes are whole, the head, at position end; it cuts what follows good
// (a torn tail) durably. Everything before end counts as durable.
func (w *Writer) Open(path string, good, end int64) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	st, err := f.Stat()
	if err == nil && st.Size() > good {
		if err = f.Truncate(good); err == nil {
			err = w.fsync(f)
		}
	}
	if err == nil {
		_, err = f.Seek(good, io.SeekStart)
	}
	if err != nil {
		f.Close()
		return fmt.Errorf("cut torn frame: %w", err)
	}
	w.f, w.size, w.end, w.durable = f, good, end, end
	return nil
}

// Start makes a new file at path, holding magic, the head, and fsyncs it
// (when there is a magic) and its directory, so that frames in it become
// durable by fsyncing the file alone. The head before it is closed: make
// it durable first (SyncNow). On an error the head is unchanged and the
// new file is removed.
func (w *Writer) Start(path, magic string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err = f.WriteString(magic); err == nil && magic != "" {
		err = w.fsync(f)
	}
	if err == nil {
		err = atomicfile.SyncDirWith(filepath.Dir(path), w.fsync)
	}
	if err != nil {
		f.Close()
		os.Remove(path) // not a segment after the head: a later open would take it for the last
		return err
	}
	if w.f != nil {
		w.f.Close()
	}
	w.f, w.size = f, int64(len(magic))
	w.end += w.size
	return nil
}

// Write appends parts (whole frames) to the head and returns the offset
// in the head file where they start. A failed write is cut off again, so
// that the file stays whole; a failed cut makes every later write fail.
func (w *Writer) Write(parts ...[]byte) (int64, error) {
	if w.werr != nil {
		return 0, w.werr
	}
	off := w.size
	for _, p := range parts {
		if len(p) == 0 {
			continue
		}
		if _, err := w.f.Write(p); err != nil {
			if terr := w.f.Truncate(off); terr != nil {
				w.werr = fmt.Errorf("%w (and cutting the frame: %v)", err, terr)
			} else if _, serr := w.f.Seek(off, io.SeekStart); serr != nil {
				w.werr = serr
			}
			w.end -= w.size - off
			w.size = off
			return 0, err
		}
		w.size += int64(len(p))
		w.end += int64(len(p))
	}
	return off, nil
}

// Size returns the bytes in the head file; End the position after the
// last byte written; Durable the position up to which everything is
// fsynced.
func (w *Writer) Size() int64    { return w.size }
func (w *Writer) End() int64     { return w.end }
func (w *Writer) Durable() int64 { return w.durable }

// Wait returns once position upTo is durable, or an fsync failed.
func (w *Writer) Wait(upTo int64) error {
	for w.durable < upTo && w.syncErr == nil {
		if w.syncing {
			w.Cond.Wait() // the fsync under way may cover upTo
			continue
		}
		w.syncing = true
		f, end := w.f, w.end
		w.Cond.L.Unlock()
		err := w.fsync(f)
		w.Cond.L.Lock()
		w.syncing = false
		w.synced(end, err)
	}
	return w.syncErr
}

func (w *Writer) synced(end int64, err error) {
	if err == nil {
		w.durable = max(w.durable, end)
	} else if w.syncErr == nil {
		w.syncErr = err
	}
	w.Cond.Broadcast()
}

// Settle waits for the fsync under way. It releases the mutex while it
// waits, so another writer may have changed the log (rolled it to a new
// file, or closed it) when it returns: a caller about to roll checks
// again whether it still must.
func (w *Writer) Settle() {
	for w.syncing {
		w.Cond.Wait()
	}
}

// SyncNow waits for the fsync under way and fsyncs the head itself,
// keeping the mutex: for a log about to leave its head for a new file.
func (w *Writer) SyncNow() error {
	w.Settle()
	if w.syncErr != nil {
		return w.syncErr
	}
	err := w.fsync(w.f)
	w.synced(w.end, err)
	return err
}

// Close fsyncs and closes the head.
func (w *Writer) Close() error {
	err := w.SyncNow()
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	return err
}
