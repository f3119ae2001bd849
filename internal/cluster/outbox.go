package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/petrel-crawler/petrel/internal/atomicfile"
)

// Outbox is the sender's durable store of batches not yet acknowledged. A
// batch is a file dir/<destination>/<incarnation>-<seq>.b (both numbers
// zero-padded to 20 digits, so that names sort in sending order), written
// through a temporary, fsynced and renamed, with the directory fsynced,
// before Put returns; it is removed only when its receiver acknowledged it
// (Ack), i.e. after the receiver's inbox made it durable. So a batch
// accepted by the outbox survives a kill of either side, and nothing in it
// is ever rolled back: a restart finds every unacknowledged batch again.
//
// Each destination holds at most Limit bytes; Put waits while it is full,
// which slows the finding agent's parsers down to the pace of the slowest
// owner (back-pressure, no drop, no unbounded buffer).
type Outbox struct {
	dir   string
	limit int64

	mu      sync.Mutex
	changed chan struct{} // closed and replaced when anything changes
	dests   map[string]*outQueue
	syncs   atomic.Int64 // fsyncs done (two per batch: the file, the directory)
	written atomic.Int64 // bytes of batches written
}

type outQueue struct {
	entries []OutEntry // in sending order
	bytes   int64
	held    int64 // bytes of the entries' wire forms kept in memory
}

// heldPerDest bounds the wire forms the outbox keeps in memory for each
// destination besides their files, so that the first send of a batch does
// not read its file back; a batch over it, or found at open, is read from
// its file.
const heldPerDest = 8 << 20

// OutEntry is one batch waiting in the outbox.
type OutEntry struct {
	ID    BatchID
	Dest  string
	Path  string
	Bytes int64

	wire []byte // the file's content, when kept in memory (Read)
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// ValidName reports whether s can name an agent: 1 to 64 letters, digits,
// dots, dashes and underscores, not starting with a punctuation mark.
func ValidName(s string) bool { return nameRE.MatchString(s) }

// OpenOutbox opens (creating) the outbox in dir, finding every batch a
// previous process left unacknowledged. limit bounds each destination's
// bytes (0: 256 MiB).
func OpenOutbox(dir string, limit int64) (*Outbox, error) {
	if limit <= 0 {
		limit = 256 << 20
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("cluster: outbox: %w", err)
	}
	o := &Outbox{dir: dir, limit: limit, changed: make(chan struct{}), dests: map[string]*outQueue{}}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("cluster: outbox: %w", err)
	}
	for _, d := range ents {
		if !d.IsDir() || !ValidName(d.Name()) {
			continue
		}
		files, err := os.ReadDir(filepath.Join(dir, d.Name()))
		if err != nil {
			return nil, fmt.Errorf("cluster: outbox: %w", err)
		}
		q := o.queue(d.Name())
		for _, f := range files {
			p := filepath.Join(dir, d.Name(), f.Name())
			if strings.HasSuffix(f.Name(), ".tmp") {
				os.Remove(p) // a Put that did not return
				continue
			}
			var inc, seq uint64
			if _, err := fmt.Sscanf(f.Name(), "%020d-%020d.b", &inc, &seq); err != nil {
				continue
			}
			info, err := f.Info()
			if err != nil {
				return nil, fmt.Errorf("cluster: outbox: %w", err)
			}
			q.entries = append(q.entries, OutEntry{Dest: d.Name(), Path: p, Bytes: info.Size(), ID: BatchID{Incarnation: inc, Seq: seq}})
			q.bytes += info.Size()
		}
	}
	return o, nil
}

func (o *Outbox) queue(dest string) *outQueue {
	q := o.dests[dest]
	if q == nil {
		q = new(outQueue)
		o.dests[dest] = q
	}
	return q
}

func (o *Outbox) notifyLocked() {
	close(o.changed)
	o.changed = make(chan struct{})
}

// Changed returns a channel closed at the next Put or Ack.
func (o *Outbox) Changed() <-chan struct{} {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.changed
}

// Put stores a batch for dest and returns once it is durable. It waits
// while dest's queue is full, until ctx ends; with wait false it stores
// the batch over the limit instead (a stopping agent's last batches, so
// that what it found is kept rather than dropped). wire is not retained.
func (o *Outbox) Put(ctx context.Context, dest string, id BatchID, wire []byte, wait bool) error {
	if !ValidName(dest) {
		return fmt.Errorf("cluster: outbox: bad destination %q", dest)
	}
	for {
		o.mu.Lock()
		q := o.queue(dest)
		if !wait || q.bytes == 0 || q.bytes+int64(len(wire)) <= o.limit {
			q.bytes += int64(len(wire)) // reserved while writing
			o.mu.Unlock()
			break
		}
		ch := o.changed
		o.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	e := OutEntry{ID: id, Dest: dest, Bytes: int64(len(wire)),
		Path: filepath.Join(o.dir, dest, fmt.Sprintf("%020d-%020d.b", id.Incarnation, id.Seq))}
	err := writeDurable(e.Path, wire)
	o.syncs.Add(2)
	o.written.Add(int64(len(wire)))
	o.mu.Lock()
	defer o.mu.Unlock()
	q := o.queue(dest)
	if err != nil {
		q.bytes -= e.Bytes
		o.notifyLocked()
		return fmt.Errorf("cluster: outbox: %w", err)
	}
	if q.held+e.Bytes <= heldPerDest {
		e.wire = slices.Clone(wire)
		q.held += e.Bytes
	}
	i, _ := slices.BinarySearchFunc(q.entries, e, compareEntries)
	q.entries = slices.Insert(q.entries, i, e)
	o.notifyLocked()
	return nil
}

func compareEntries(a, b OutEntry) int {
	if a.ID.Incarnation != b.ID.Incarnation {
		return cmpU(a.ID.Incarnation, b.ID.Incarnation)
	}
	return cmpU(a.ID.Seq, b.ID.Seq)
}

func cmpU(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// writeDurable writes b to path through a temporary: fsync, rename, fsync
// of the directory.
func writeDurable(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return atomicfile.WriteBytes(path, b, atomicfile.Options{Sync: true, SyncDir: true})
}

// Pending returns up to n of dest's batches in sending order, skipping
// those skip reports true for (e.g. in flight).
func (o *Outbox) Pending(dest string, n int, skip func(BatchID) bool) []OutEntry {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []OutEntry
	for _, e := range o.queue(dest).entries {
		if len(out) >= n {
			break
		}
		if skip == nil || !skip(e.ID) {
			out = append(out, e)
		}
	}
	return out
}

// Ack removes an acknowledged batch.
func (o *Outbox) Ack(e OutEntry) error {
	o.mu.Lock()
	q := o.queue(e.Dest)
	i := slices.IndexFunc(q.entries, func(x OutEntry) bool { return x.ID == e.ID })
	if i < 0 {
		o.mu.Unlock()
		return nil
	}
	if q.entries[i].wire != nil {
		q.held -= q.entries[i].Bytes
	}
	q.entries = slices.Delete(q.entries, i, i+1)
	q.bytes -= e.Bytes
	o.notifyLocked()
	o.mu.Unlock()
	if err := os.Remove(e.Path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("cluster: outbox: %w", err)
	}
	return nil
}

// Read returns the wire form of a stored batch (not to be modified).
func (o *Outbox) Read(e OutEntry) ([]byte, error) {
	if e.wire != nil {
		return e.wire, nil
	}
	return os.ReadFile(e.Path)
}

// Dests returns the destinations holding batches.
func (o *Outbox) Dests() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []string
	for d, q := range o.dests {
		if len(q.entries) > 0 {
			out = append(out, d)
		}
	}
	slices.Sort(out)
	return out
}

// Len returns the batches and bytes held for every destination.
func (o *Outbox) Len() (batches int, bytes int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, q := range o.dests {
		batches += len(q.entries)
		bytes += q.bytes
	}
	return
}
