package agent

// Checkpoints. A checkpoint is a folder state/checkpoints/cp-N
// holding, at one logical point of the crawl:
//
//	sieve/      the DRUM store, hard-linked, and its pending keys (Frontier.Checkpoint step 3)
//	ready.pos   the ready queue's position (a diskq mark, pinned until released)
//	todo        URLs to fetch again: frontier.CheckpointSink's WriteTodo records
//	virtual/    the virtualizer's segments, hard-linked, and its index (diskq Queues.Checkpoint)
//	virtual.keys the visit states whose queues continue in virtual/: id, count, URL prefix
//	counts      per-key URL counts
//	received.pos the position in the log of hand-off parts received that its sieve and counts cover (countslog.go)
//	handovers   the keys' hand-over state, when some key has one (handoverfile.go)
//	stats.json  the counters
//	MANIFEST    JSON: sequence, time, record count, the WARC files and sizes
//
// It is written as cp-N.tmp, every file fsynced, renamed to cp-N, and named
// in state/CHECKPOINT (replaced atomically). Two checkpoints are kept, so a
// corrupted newest one falls back to the previous. The todo file format:
// "PTODO2\n", then per record uvarint(len) bytes (a frontier record: Meta
// version 1, then URL), then a trailer of
// uvarint(count) and the CRC-32C (4 bytes, little endian) of everything
// before the trailer; a file whose trailer does not match is corrupt.
// virtual.keys has the same framing with the magic "PVKEYS1\n", a record
// per key: uvarint(id), uvarint(count), then the prefix. A restore pushes
// the records of those ids in virtual/ (Meta, then the URL without its
// prefix) to the ready queue with their prefix put back, and ignores any
// other id's.
//
// state/RUNNING exists while a crawl runs; finding it at Open (with the
// directory lock free) means the last process died, and recovery goes back
// to the newest valid checkpoint.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/petrel-crawler/petrel/internal/atomicfile"
	"github.com/petrel-crawler/petrel/internal/cluster"
	"github.com/petrel-crawler/petrel/internal/diskq"
	"github.com/petrel-crawler/petrel/internal/frontier"
	"github.com/petrel-crawler/petrel/internal/stats"
	"github.com/petrel-crawler/petrel/internal/store"
)

const (
	todoMagic        = "PTODO2\n"
	virtualKeysMagic = "PVKEYS1\n"
	keepCheckpoints  = 2
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// manifest describes a checkpoint.
type manifest struct {
	Seq       int              `json:"seq"`
	Time      time.Time        `json:"time"`
	Todo      int64            `json:"todo"`
	Virtual   int64            `json:"virtual,omitempty"`
	PauseMS   float64          `json:"pause_ms"`
	Queued    int64            `json:"queued"`
	WARCFiles map[string]int64 `json:"warc_files"` // name → size at the checkpoint
	// Taken is when the frontier's state was taken; Unfinished the page
	// fetches begun before it and not finished then. A restore fetches
	// again those and every page whose fetch began after Taken.
	Taken      time.Time `json:"taken"`
	Unfinished int64     `json:"unfinished"`
}

// checkpointSink writes a checkpoint folder for Frontier.Checkpoint.
type checkpointSink struct {
	a    *Agent
	dir  string
	mark diskq.Position
	f    *os.File
	w    *bufio.Writer
	crc  io.Writer
	n    uint64

	// The first records of the todo file (frontier.DefaultTodoHoldBytes)
	// are held in RAM during the pause, so that it does not wait for the
	// file's writes.
	held    *frontier.TodoHold
	spilled bool
	hdr     [binary.MaxVarintLen64]byte

	// counts are the per-key counts as of the pause, written to the
	// checkpoint once the scheduler runs again; sieveTime and countsTime
	// are what saving the sieve and copying the counts took of the pause.
	counts                *bytes.Buffer
	sieveTime, countsTime time.Duration

	// virtualKeys is the content of virtual.keys and finishVirtual writes
	// the virtualizer's index and fsyncs virtual/, both after the pause;
	// virtualTime is what checkpointing the virtualizer took of the pause.
	virtualKeys   []byte
	finishVirtual func() error
	virtualTime   time.Duration

	handovers []frontier.HandoverKey // the keys' hand-over state (handoverfile.go)
}

// CheckpointVirtual checkpoints the virtualizer (hard links to its sealed
// segments, and its index) instead of copying its records to the todo
// file, and notes the visit states its records belong to.
func (s *checkpointSink) CheckpointVirtual(keys []frontier.VirtualKey) error {
	t0 := time.Now()
	finish, err := s.a.virtual.Checkpoint(filepath.Join(s.dir, "virtual"))
	if err != nil {
		return err
	}
	s.finishVirtual = finish
	recs := make([][]byte, len(keys))
	for i, k := range keys {
		r := binary.AppendUvarint(nil, k.ID)
		r = binary.AppendUvarint(r, uint64(k.Count))
		recs[i] = append(r, k.Prefix...)
	}
	s.virtualKeys = appendRecordsFile(nil, virtualKeysMagic, recs)
	s.virtualTime = time.Since(t0)
	return nil
}

func (s *checkpointSink) MarkReady() error {
	pos, err := s.a.ready.Mark()
	s.mark = pos
	return err
}

// WriteTodo adds a record to the todo file: to s.held, in RAM, while that
// has room (written out once the pause is over, by writeHeld), to the file
// after it.
func (s *checkpointSink) WriteTodo(rec []byte) error {
	s.n++
	if !s.spilled && s.held.Hold(rec) {
		return nil
	}
	if !s.spilled {
		if err := s.writeHeld(); err != nil {
			return err
		}
		s.spilled = true
	}
	if _, err := s.crc.Write(binary.AppendUvarint(s.hdr[:0], uint64(len(rec)))); err != nil {
		return err
	}
	_, err := s.crc.Write(rec)
	return err
}

// writeHeld writes the records held in RAM to the todo file.
func (s *checkpointSink) writeHeld() error {
	_, err := s.held.WriteTo(s.crc)
	return err
}

// CheckpointSieve saves the sieve without flushing it: its committed store
// (hard links) and its pending keys, which a restore replays. The pause
// then does not wait for a merge of the whole store.
// The per-key counts are copied in RAM, and written out after the pause.
func (s *checkpointSink) CheckpointSieve() error {
	t0 := time.Now()
	if err := s.a.sieve.CheckpointPending(filepath.Join(s.dir, "sieve")); err != nil {
		return err
	}
	t1 := time.Now()
	err := s.a.frontier.SaveCounts(s.counts)
	s.sieveTime, s.countsTime = t1.Sub(t0), time.Since(t1)
	return err
}

// checkpointBuffers are the RAM buffers of a checkpoint's pause, reused by
// the next checkpoint (checkpoints are taken one at a time).
type checkpointBuffers struct {
	counts bytes.Buffer      // the per-key counts
	held   frontier.TodoHold // the first records of the todo file
}

// checkpointsDir is where checkpoints live.
func (a *Agent) checkpointsDir() string { return filepath.Join(a.cfg.Dir, "state", "checkpoints") }

// checkpoint takes one checkpoint while the crawl runs.
func (a *Agent) checkpoint(ctx context.Context) error {
	a.cpSeq++
	seq := a.cpSeq
	final := filepath.Join(a.checkpointsDir(), fmt.Sprintf("cp-%06d", seq))
	tmp := final + ".tmp"
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return fmt.Errorf("agent: checkpoint: %w", err)
	}
	f, err := os.Create(filepath.Join(tmp, "todo"))
	if err != nil {
		return fmt.Errorf("agent: checkpoint: %w", err)
	}
	defer f.Close()
	w := bufio.NewWriterSize(f, 1<<20)
	if _, err := w.WriteString(todoMagic); err != nil {
		return err
	}
	h := crc32.New(crcTable)
	h.Write([]byte(todoMagic))
	// The pause's buffers are the agent's, kept from one checkpoint to the
	// next: allocating tens of MiB in the pause, with the heap near its
	// limit, would have the pause do the garbage collector's work.
	a.cpBufs.counts.Reset()
	a.cpBufs.held.Reset()
	sink := &checkpointSink{a: a, dir: tmp, f: f, w: w, crc: io.MultiWriter(w, h),
		counts: &a.cpBufs.counts, held: &a.cpBufs.held}
	// A flush before the scheduler stops delivers what the sieve holds, so
	// that the pending keys the snapshot copies are only those enqueued
	// since: a few, not up to a buffer's worth.
	if err := a.flushForCheckpoint(); err != nil { // revisits.go
		return fmt.Errorf("agent: checkpoint %d: %w", seq, err)
	}
	release := a.clusterHost.holdCut() // clusterreturncounts.go
	if a.node != nil {
		// No batch is applied while the frontier's state is taken: the
		// inbox position saved with it is the same logical point.
		a.node.PauseApply()
	}
	info, err := a.checkpointFrontier(ctx, sink, tmp) // countslog.go
	release()
	if a.node != nil {
		err = a.checkpointCluster(tmp, err)
	}
	if err != nil {
		return fmt.Errorf("agent: checkpoint %d: %w", seq, err)
	}
	if err := writeChecked(filepath.Join(tmp, "counts"), func(w io.Writer) error {
		_, err := sink.counts.WriteTo(w)
		return err
	}); err != nil {
		return fmt.Errorf("agent: checkpoint %d: counts: %w", seq, err)
	}
	if sink.virtualKeys != nil {
		if err := atomicfile.WriteBytes(filepath.Join(tmp, "virtual.keys"), sink.virtualKeys, atomicfile.Options{Sync: true}); err != nil {
			return fmt.Errorf("agent: checkpoint %d: virtual.keys: %w", seq, err)
		}
		if err := sink.finishVirtual(); err != nil {
			return fmt.Errorf("agent: checkpoint %d: %w", seq, err)
		}
	}
	if err := writeHandovers(filepath.Join(tmp, handoversFile), sink.handovers); err != nil {
		return fmt.Errorf("agent: checkpoint %d: %w", seq, err)
	}
	if err := sink.writeHeld(); err != nil {
		return fmt.Errorf("agent: checkpoint: todo: %w", err)
	}
	var tr []byte
	tr = binary.AppendUvarint(tr, sink.n)
	tr = binary.LittleEndian.AppendUint32(tr, h.Sum32())
	if _, err := w.Write(tr); err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("agent: checkpoint: todo: %w", err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("agent: checkpoint: todo: %w", err)
	}
	pos, err := sink.mark.MarshalBinary()
	if err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(tmp, "ready.pos"), atomicfile.Options{Sync: true}, func(w io.Writer) error { _, err := w.Write(pos); return err }); err != nil {
		return fmt.Errorf("agent: checkpoint: %w", err)
	}
	if err := a.writeCheckpointStats(tmp, info); err != nil {
		return fmt.Errorf("agent: checkpoint: %w", err)
	}
	m := manifest{Seq: seq, Time: time.Now().UTC(), Todo: info.Todo, Virtual: info.Virtual, PauseMS: float64(info.Pause) / 1e6,
		Queued: a.stats.Queued.Load() + a.stats.Ready.Load(), WARCFiles: warcSizes(filepath.Join(a.cfg.Dir, "warc")),
		Taken: info.Start.UTC(), Unfinished: info.Unfinished}
	if err := atomicfile.Write(filepath.Join(tmp, "MANIFEST"), atomicfile.Options{Sync: true}, func(w io.Writer) error { return json.NewEncoder(w).Encode(m) }); err != nil {
		return fmt.Errorf("agent: checkpoint: %w", err)
	}
	if err := a.commitCheckpoint(ctx, tmp, final); err != nil {
		return err
	}
	a.stats.Checkpoints.Add(1)
	a.stats.CheckpointPauseNano.Store(int64(info.Pause))
	a.log.Info("checkpoint", "seq", seq, "taken", info.Start.UTC(), "todo", info.Todo, "virtual", info.Virtual, "pause", info.Pause, "queued", m.Queued, "unfinished", info.Unfinished,
		"pause_sieve", sink.sieveTime, "pause_counts", sink.countsTime, "pause_virtual", sink.virtualTime)
	a.pruneCheckpoints()
	a.trimInbox()
	a.trimReceived()
	return nil
}

// writeCheckpointStats writes the counters into the checkpoint folder
// tmp: as of now, but for the page fetches held to --max-urls, which are
// the frontier's as of its snapshot (info).
func (a *Agent) writeCheckpointStats(tmp string, info frontier.CheckpointInfo) error {
	snap := a.stats.Snapshot()
	snap["PagesDispatched"] = info.Dispatched
	return writeChecked(filepath.Join(tmp, "stats.json"), snap.WriteJSON)
}

// commitCheckpoint makes the checkpoint written in tmp the newest one: tmp
// is synced and renamed to final, and state/CHECKPOINT names it. Crash
// recovery finds checkpoints by listing their folders: a crash before the
// rename leaves tmp, which it ignores and removes; after the rename the
// checkpoint is complete, whether state/CHECKPOINT names it yet or not.
// A leave's URLs moved out of the frontier and held are logged first
// (leavemoved.go): no checkpoint that no longer has them commits before.
// Once the WARC writer has failed, no checkpoint commits: a page stored
// before its cut may have been lost, and recovering to it would not fetch
// that page again.
func (a *Agent) commitCheckpoint(ctx context.Context, tmp, final string) error {
	if err := a.store.Err(); err != nil {
		return fmt.Errorf("agent: checkpoint %s not committed, the WARC files failed: %w", filepath.Base(final), err)
	}
	if err := a.clusterHost.sealMoved(ctx); err != nil {
		return fmt.Errorf("agent: checkpoint: %w", err)
	}
	if err := atomicfile.SyncDir(tmp); err != nil {
		return err
	}
	a.crash.reach("checkpoint")
	if err := os.Rename(tmp, final); err != nil {
		return fmt.Errorf("agent: checkpoint: %w", err)
	}
	if err := atomicfile.SyncDir(a.checkpointsDir()); err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(a.cfg.Dir, "state", "CHECKPOINT"), atomicfile.Options{Sync: true}, func(w io.Writer) error {
		_, err := io.WriteString(w, filepath.Base(final)+"\n")
		return err
	}); err != nil {
		return fmt.Errorf("agent: checkpoint: %w", err)
	}
	return nil
}

// pruneCheckpoints keeps the newest checkpoints and releases the ready
// queue marks only older ones needed.
func (a *Agent) pruneCheckpoints() {
	names := listCheckpoints(a.checkpointsDir())
	keep := map[string]bool{}
	for i := len(names) - 1; i >= 0 && len(keep) < keepCheckpoints; i-- {
		keep[string(mustRead(filepath.Join(a.checkpointsDir(), names[i], "ready.pos")))] = true
	}
	for i := 0; i < len(names)-keepCheckpoints; i++ {
		os.RemoveAll(filepath.Join(a.checkpointsDir(), names[i]))
	}
	for _, p := range a.ready.Marks() {
		b, _ := p.MarshalBinary()
		if !keep[string(b)] {
			a.ready.Release(p)
		}
	}
}

func mustRead(p string) []byte {
	b, _ := os.ReadFile(p)
	return b
}

// listCheckpoints returns the complete checkpoint folders, oldest first.
func listCheckpoints(dir string) []string {
	ents, _ := os.ReadDir(dir)
	var out []string
	for _, e := range ents {
		if e.IsDir() && strings.HasPrefix(e.Name(), "cp-") && !strings.HasSuffix(e.Name(), ".tmp") {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out
}

// checkpointLoop takes a checkpoint at the start of the crawl, then every
// interval on the crawl's clock and on request (see checkpointTimes),
// writing out the failed-URL record's buffer first.
func (a *Agent) checkpointLoop(ctx context.Context, interval time.Duration, every <-chan time.Duration) {
	checkpointTimes(ctx, a.clock, interval, every, a.cpRequests, func() error {
		if err := a.failed.flush(); err != nil { // failedlog.go
			a.log.Error("state/failed: write", "err", err)
		}
		err := a.checkpoint(ctx)
		if err != nil && ctx.Err() == nil {
			a.stats.CheckpointErrors.Add(1)
			a.log.Error("checkpoint failed", "err", err)
		}
		return err
	})
}

// RequestCheckpoint asks the running crawl for a checkpoint now (SIGUSR1);
// a request made while one is pending is the same request.
func (a *Agent) RequestCheckpoint() {
	select {
	case a.cpRequests <- nil:
	default:
	}
}

// Checkpoint takes a checkpoint now and returns when it is written (or
// ctx ends: the checkpoint then goes on, unwaited for).
func (a *Agent) Checkpoint(ctx context.Context) error {
	reply := make(chan error, 1)
	select {
	case a.cpRequests <- reply:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-reply:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// warcSizes lists the WARC files of dir with their sizes.
func warcSizes(dir string) map[string]int64 {
	out := map[string]int64{}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if fi, err := e.Info(); err == nil && !e.IsDir() {
			out[strings.TrimSuffix(e.Name(), ".open")] = fi.Size()
		}
	}
	return out
}

// loadedCheckpoint is a checkpoint read back for recovery.
type loadedCheckpoint struct {
	dir     string
	man     manifest
	pos     diskq.Position
	todo    [][]byte
	virtual map[uint64]string // visit-state id → URL prefix, of the records in virtual/
	nvirt   int64             // records of those ids in virtual/
	snap    stats.Snapshot
}

// loadCheckpoint reads and verifies a checkpoint folder.
func loadCheckpoint(dir string) (*loadedCheckpoint, error) {
	c := &loadedCheckpoint{dir: dir}
	b, err := os.ReadFile(filepath.Join(dir, "MANIFEST"))
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, &c.man); err != nil {
		return nil, fmt.Errorf("MANIFEST: %w", err)
	}
	b, err = os.ReadFile(filepath.Join(dir, "ready.pos"))
	if err != nil {
		return nil, err
	}
	if err := c.pos.UnmarshalBinary(b); err != nil {
		return nil, fmt.Errorf("ready.pos: %w", err)
	}
	for _, f := range []string{"stats.json", "counts"} {
		if err := verifyChecksum(filepath.Join(dir, f)); err != nil {
			return nil, err
		}
	}
	if b, err = os.ReadFile(filepath.Join(dir, "stats.json")); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, &c.snap); err != nil {
		return nil, fmt.Errorf("stats.json: %w", err)
	}
	if b, err = os.ReadFile(filepath.Join(dir, "todo")); err != nil {
		return nil, err
	}
	if c.todo, err = parseTodo(b); err != nil {
		return nil, fmt.Errorf("todo: %w", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "sieve")); err != nil {
		return nil, err
	}
	if err := c.loadVirtualKeys(); err != nil {
		return nil, err
	}
	return c, nil
}

// loadVirtualKeys reads virtual.keys, if the checkpoint has one, and checks
// that virtual/ holds as many records of each key as it says.
func (c *loadedCheckpoint) loadVirtualKeys() error {
	b, err := os.ReadFile(filepath.Join(c.dir, "virtual.keys"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	recs, err := parseRecordsFile(b, virtualKeysMagic)
	if err != nil {
		return fmt.Errorf("virtual.keys: %w", err)
	}
	vc, err := diskq.OpenCheckpoint(filepath.Join(c.dir, "virtual"), diskq.Options{})
	if err != nil {
		return err
	}
	defer vc.Close()
	c.virtual = make(map[uint64]string, len(recs))
	for _, r := range recs {
		id, k := binary.Uvarint(r)
		n, k2 := binary.Uvarint(r[max(k, 0):])
		if k <= 0 || k2 <= 0 {
			return errors.New("virtual.keys: bad record")
		}
		if got := vc.Count(id); got != int64(n) {
			return fmt.Errorf("virtual/: %d records of visit state %d, virtual.keys says %d", got, id, n)
		}
		c.virtual[id] = string(r[k+k2:])
		c.nvirt += int64(n)
	}
	return nil
}

// restoreVirtual pushes the checkpoint's virtualized records to q, their
// prefixes put back.
func (c *loadedCheckpoint) restoreVirtual(q *diskq.Queue) error {
	if c.virtual == nil {
		return nil
	}
	vc, err := diskq.OpenCheckpoint(filepath.Join(c.dir, "virtual"), diskq.Options{})
	if err != nil {
		return err
	}
	defer vc.Close()
	var buf []byte
	var pushed int64
	err = vc.Snapshot(func(id uint64, r []byte) error {
		prefix, ok := c.virtual[id]
		if !ok || len(r) < frontier.MetaLen {
			return nil
		}
		buf = append(append(append(buf[:0], r[:frontier.MetaLen]...), prefix...), r[frontier.MetaLen:]...)
		pushed++
		return q.Push(buf)
	})
	if err == nil && pushed != c.nvirt {
		err = fmt.Errorf("read %d virtualized records, virtual.keys lists %d", pushed, c.nvirt)
	}
	return err
}

// parseTodo checks and splits a todo file.
func parseTodo(b []byte) ([][]byte, error) {
	if strings.HasPrefix(string(b), "PTODO1\n") {
		return nil, errors.New("written by an earlier Petrel (unversioned per-URL metadata), which this version does not read")
	}
	return parseRecordsFile(b, todoMagic)
}

// appendRecordsFile appends to dst a file of recs in the framing of the
// todo file: magic, uvarint-framed records, count and CRC-32C.
func appendRecordsFile(dst []byte, magic string, recs [][]byte) []byte {
	start := len(dst)
	dst = append(dst, magic...)
	for _, r := range recs {
		dst = binary.AppendUvarint(dst, uint64(len(r)))
		dst = append(dst, r...)
	}
	sum := crc32.Checksum(dst[start:], crcTable)
	dst = binary.AppendUvarint(dst, uint64(len(recs)))
	return binary.LittleEndian.AppendUint32(dst, sum)
}

// parseRecordsFile checks and splits a file in the framing of the todo
// file with the given magic.
func parseRecordsFile(b []byte, magic string) ([][]byte, error) {
	if !strings.HasPrefix(string(b), magic) {
		return nil, errors.New("bad magic")
	}
	var recs [][]byte
	p := len(magic)
	for {
		// Try the trailer here: count and CRC of b[:p].
		if n, k := binary.Uvarint(b[p:]); k > 0 && p+k+4 == len(b) {
			if n == uint64(len(recs)) && binary.LittleEndian.Uint32(b[p+k:]) == crc32.Checksum(b[:p], crcTable) {
				return recs, nil
			}
		}
		l, k := binary.Uvarint(b[p:])
		if k <= 0 || p+k+int(l) > len(b) {
			return nil, errors.New("truncated or corrupt (trailer does not match)")
		}
		recs = append(recs, b[p+k:p+k+int(l)])
		p += k + int(l)
	}
}

// recover goes back to the newest valid checkpoint: after a crash (the
// directory lock is ours and state/RUNNING is there: the last process
// died without closing, or its close could not save the state), or when
// a state file of a clean stop is corrupt (a.fallback).
func (a *Agent) recover(state string) error {
	report, err := a.recoverFromCrash(state)
	if err != nil {
		return fmt.Errorf("agent: crash recovery: %w", err)
	}
	why := "the last crawl in this directory did not stop cleanly"
	if a.fallback != nil {
		why = a.fallback.Error() + "; back to the newest valid checkpoint"
	}
	a.log.Warn("crash recovery", "why", why, "report", report)
	if a.progress != nil {
		fmt.Fprintf(a.progress, "petrel: %s: %s\n", why, report)
	}
	return nil
}

// repairOpenWARC closes the WARC files an earlier run left open although
// it removed state/RUNNING (an earlier Petrel did so after a close that
// failed): the directory lock is ours, so no process writes them. Each is
// cut after its last whole record, renamed and indexed, and said.
func (a *Agent) repairOpenWARC() error {
	report, err := store.Repair(filepath.Join(a.cfg.Dir, "warc"), a.cfg.Store.Index, a.indexOptions())
	if err != nil {
		return fmt.Errorf("agent: WARC files left open: %w", err)
	}
	if report != "" {
		a.log.Warn("WARC files left open by an earlier run repaired", "report", report)
		if a.progress != nil {
			fmt.Fprintln(a.progress, "petrel: WARC files left open by an earlier run:", report)
		}
	}
	return nil
}

// checkStateFiles checks, at the start after a clean stop, the state
// files that have no framing of their own against their checksums, and
// that stats.json parses.
func checkStateFiles(state string) error {
	for _, f := range []string{"counts", "stats.json"} {
		if err := verifyChecksum(filepath.Join(state, f)); err != nil {
			return err
		}
	}
	b, err := os.ReadFile(filepath.Join(state, "stats.json"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	var snap stats.Snapshot
	if err == nil {
		err = json.Unmarshal(b, &snap)
	}
	if err != nil {
		return fmt.Errorf("stats.json: corrupt: %w", err)
	}
	return nil
}

// recoverFromCrash puts state/ back to the newest valid checkpoint after a
// crash, and repairs torn WARC files. It returns a one-line report.
func (a *Agent) recoverFromCrash(state string) (string, error) {
	var notes []string
	if n, err := store.Repair(filepath.Join(a.cfg.Dir, "warc"), a.cfg.Store.Index, a.indexOptions()); err != nil {
		return "", err
	} else if n != "" {
		notes = append(notes, n)
	}
	names := listCheckpoints(filepath.Join(state, "checkpoints"))
	if tmps, _ := filepath.Glob(filepath.Join(state, "checkpoints", "cp-*.tmp")); len(tmps) > 0 {
		for _, t := range tmps {
			notes = append(notes, fmt.Sprintf("checkpoint %s half-written, ignored", filepath.Base(t)))
			os.RemoveAll(t)
		}
	}
	var cp *loadedCheckpoint
	for i := len(names) - 1; i >= 0 && cp == nil; i-- {
		c, err := loadCheckpoint(filepath.Join(state, "checkpoints", names[i]))
		if errors.Is(err, diskq.ErrOldFormat) {
			// Falling back would start the crawl again from its seeds.
			return "", fmt.Errorf("checkpoint %s: %w; recover it with the Petrel that wrote it", names[i], err)
		}
		if err != nil {
			notes = append(notes, fmt.Sprintf("checkpoint %s unusable (%v), trying the previous one", names[i], err))
			continue
		}
		cp = c
	}
	for _, d := range []string{"sieve", "virtual"} {
		if err := os.RemoveAll(filepath.Join(state, d)); err != nil {
			return "", err
		}
	}
	if cp == nil {
		if err := os.RemoveAll(filepath.Join(state, "ready")); err != nil {
			return "", err
		}
		os.Remove(filepath.Join(state, "counts"))
		os.Remove(filepath.Join(state, "counts"+checksumSuffix))
		os.Remove(filepath.Join(state, receivedFile))
		os.Remove(filepath.Join(state, replayFile))
		os.Remove(filepath.Join(state, handoversFile))
		os.Remove(filepath.Join(state, "cluster", "applied.json")) // the inbox is replayed from its start
		dropDigestFilters(state, time.Time{})
		notes = append(notes, "no usable checkpoint: the crawl starts again from its seeds (WARC files kept)")
		return strings.Join(notes, "; "), nil
	}
	if n := dropDigestFilters(state, cp.man.Time); n > 0 {
		notes = append(notes, fmt.Sprintf("%d digest filters saved after the checkpoint dropped", n))
	}
	if n, err := restoreSeenAndCounts(cp.dir, state); err != nil { // countslog.go
		return "", err
	} else if n > 0 {
		notes = append(notes, fmt.Sprintf("counts of %d hand-off parts received after the checkpoint added", n))
	}
	q, err := diskq.OpenAt(filepath.Join(state, "ready"), cp.pos, diskq.DefaultOptions())
	if err != nil {
		return "", fmt.Errorf("agent: restore ready queue: %w", err)
	}
	for _, rec := range cp.todo {
		if err := q.Push(rec); err != nil {
			q.Close()
			return "", fmt.Errorf("agent: restore ready queue: %w", err)
		}
	}
	if err := cp.restoreVirtual(q); err != nil {
		q.Close()
		return "", fmt.Errorf("agent: restore virtualized URLs: %w", err)
	}
	if err := q.Close(); err != nil {
		return "", fmt.Errorf("agent: restore ready queue: %w", err)
	}
	if err := writeChecked(filepath.Join(state, "stats.json"), cp.snap.WriteJSON); err != nil {
		return "", err
	}
	if err := restoreHandovers(cp.dir, state); err != nil {
		return "", fmt.Errorf("agent: restore hand-over keys: %w", err)
	}
	if b, err := os.ReadFile(filepath.Join(cp.dir, clusterStateFile)); err == nil {
		if err := cluster.RestoreCheckpointState(filepath.Join(state, "cluster"), b); err != nil {
			return "", fmt.Errorf("agent: restore cluster inbox position: %w", err)
		}
		notes = append(notes, "cluster inbox replayed from the checkpoint")
	}
	again := store.CountResponsesAfter(filepath.Join(a.cfg.Dir, "warc"), cp.man.WARCFiles)
	notes = append(notes, fmt.Sprintf("recovered from %s taken at %s: %d URLs queued again; %d responses stored after it may be fetched again",
		filepath.Base(cp.dir), cp.man.Time.Format(time.RFC3339), int64(len(cp.todo))+cp.nvirt, again))
	return strings.Join(notes, "; "), nil
}

// dropDigestFilters removes the digest filters saved in state after t (a
// zero t: any), and returns how many: a close that could not save all the
// crawl held, or a clean stop whose state is found corrupt, saved them
// with the pages fetched after the checkpoint a recovery goes back to,
// which it fetches again. Kept, they would take those pages for
// duplicates of themselves, and their links would not be followed.
func dropDigestFilters(state string, t time.Time) int {
	n := 0
	for _, f := range []string{"text-digests", "payload-digests"} {
		p := filepath.Join(state, f)
		if fi, err := os.Stat(p); err == nil && fi.ModTime().After(t) && os.Remove(p) == nil {
			n++
		}
	}
	return n
}

func copyTree(src, dst string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	ents, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if err := copyFile(filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())); err != nil {
			return err
		}
	}
	return atomicfile.SyncDir(dst)
}

// copyFile copies src to dst (not a hard link: the live files are rewritten
// in place by some stages, and the checkpoint must stay as it is).
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	return atomicfile.Write(dst, atomicfile.Options{Sync: true}, func(w io.Writer) error { _, err := io.Copy(w, in); return err })
}
