package agent

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/petrel-crawler/petrel/internal/atomicfile"
	"github.com/petrel-crawler/petrel/internal/framelog"
	"github.com/petrel-crawler/petrel/internal/frontier"
)

// The log of what hand-off parts brought: their budget counts and seen
// hashes. A part's counts are added to the frontier's counting map and
// its seen hashes to the sieve, both of which crash recovery puts back to
// the last checkpoint; so before they are added they are appended to
// state/counts.received and fsynced, and the part is acknowledged after.
// Every checkpoint records the log position its sieve and counts cover
// (received.pos): crash recovery restores the checkpoint's counts and adds
// the log's entries after that position, and leaves that position in
// state/received.replay, from which the sieve's next open inserts the
// log's seen hashes (replayReceivedSeen); so a crash of the receiver
// before its checkpoint neither loses nor doubles them. A part's id
// (sender, epoch, sequence) is in its frame: a part sent again after a
// crash that came between its frame and the acknowledgement is not added
// twice. The ids outlive their counts and seen hashes: a trim keeps the
// ids of the frames it drops (the newest maxDroppedIDs of them) as frames
// without entries.
//
// Format: receivedMagic, the log position of the first frame (uint64
// little-endian), then frames (package framelog) whose body is
//
//	uvarint length, the part's id, then (count key uint64
//	little-endian, count uvarint)*, as in the counts file
//	or, for a part with seen hashes:
//	0x00, uvarint length, the part's id, uvarint number of seen
//	hashes, the seen hashes (uint64 little-endian), then the
//	count entries as above
//
// A part's id is never empty, so a body's first byte tells the two kinds
// apart. A count is the uvarint of its two's complement: a negative one
// (the correction of a return, clusterreturncounts.go) takes off, and the
// counts file's reader, which adds repeated keys, adds it as it is. A
// frame of the first kind without entries only records that its part was
// applied. Inserting seen hashes again is harmless (the sieve keeps each
// once), so a replay interrupted by another crash is done again whole.
//
// A position is the offset in the concatenation of every frame ever
// written, so it stays valid when a checkpoint's commit drops the frames
// that no kept checkpoint needs (trim): the frames kept keep their
// positions, and the frames of the ids kept are put just before them,
// where the dropped frames were (a frame without entries is no longer
// than the frame it stands for). They lie before every kept checkpoint's
// position, so no recovery replays them, and would add nothing if one
// did. A torn frame at the end (a crash in a write) is cut at open: its
// part was not acknowledged.

const (
	receivedMagic   = "PRCOUNTS1\n"
	receivedFile    = "counts.received"
	receivedPosFile = "received.pos"
	replayFile      = "received.replay"
	receivedHead    = len(receivedMagic) + 8
)

// maxDroppedIDs bounds the ids a trim keeps of the frames it drops. A part
// is sent again when its acknowledgement is lost, within the sender's
// retries; the exchange's own record of applied parts (awaiting.json)
// covers it from its acknowledgement on.
const maxDroppedIDs = 4096

// countsLog is the open log; the zero value is not usable (openCountsLog).
type countsLog struct {
	mu     sync.Mutex
	path   string
	w      *framelog.Writer // its End: the position after the last frame
	base   int64            // position of the first frame in the file
	ids    map[string]bool
	frames []frameMark // every frame in the file, in order
	maxIDs int         // the ids a trim keeps (maxDroppedIDs)
}

// frameMark is what the log keeps in RAM of a frame.
type frameMark struct {
	pos  int64
	id   string
	full bool // it has entries or seen hashes
}

// receivedFrame is one frame read back.
type receivedFrame struct {
	pos     int64
	id      string
	seen    []uint64
	entries []byte // (key, count)* as in the counts file
}

// openCountsLog opens (or creates) the log at path.
func openCountsLog(path string) (*countsLog, error) {
	l := &countsLog{path: path, ids: map[string]bool{}, maxIDs: maxDroppedIDs}
	base, frames, good, err := readCountsLog(path)
	if errors.Is(err, os.ErrNotExist) {
		if err := writeCountsLog(path, 0, nil); err != nil {
			return nil, err
		}
		good = int64(receivedHead)
	} else if err != nil {
		return nil, err
	}
	l.mark(frames)
	if err := l.open(base, good); err != nil { // a torn frame's part was never acknowledged
		return nil, fmt.Errorf("agent: %s: %w", path, err)
	}
	return l, nil
}

// open makes the file, whose first good bytes are whole frames after the
// header, the one appended to, its first frame at position base.
func (l *countsLog) open(base, good int64) error {
	w := framelog.NewWriter(&l.mu, (*os.File).Sync)
	if err := w.Open(l.path, good, base+good-int64(receivedHead)); err != nil {
		return err
	}
	l.w, l.base = w, base
	return nil
}

// close closes the file.
func (l *countsLog) close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Close()
}

// mark sets what the log keeps in RAM of its frames.
func (l *countsLog) mark(frames []receivedFrame) {
	l.ids, l.frames = make(map[string]bool, len(frames)), make([]frameMark, 0, len(frames))
	for _, fr := range frames {
		l.ids[fr.id] = true
		l.frames = append(l.frames, frameMark{pos: fr.pos, id: fr.id, full: len(fr.entries) > 0 || len(fr.seen) > 0})
	}
}

// readCountsLog reads a log's frames and the file offset after the last
// whole one.
func readCountsLog(path string) (base int64, frames []receivedFrame, good int64, err error) {
	head, good, _, err := framelog.Scan(path, receivedMagic, receivedHead, math.MaxUint32, func(body []byte, off int64) error {
		fr, ok := parseReceivedFrame(body)
		if !ok {
			return framelog.ErrTorn
		}
		fr.entries = slices.Clone(fr.entries)
		fr.pos = off - framelog.HeaderLen - int64(receivedHead) // base added below
		frames = append(frames, fr)
		return nil
	})
	if err == nil && head == nil {
		err = fmt.Errorf("%s: not a log of received counts", path)
	}
	if err != nil {
		return 0, nil, 0, fmt.Errorf("agent: %w", err)
	}
	base = int64(binary.LittleEndian.Uint64(head[len(receivedMagic):]))
	for i := range frames {
		frames[i].pos += base
	}
	return base, frames, good, nil
}

// parseReceivedFrame reads a frame's body, of either kind.
func parseReceivedFrame(body []byte) (fr receivedFrame, ok bool) {
	withSeen := len(body) > 0 && body[0] == 0
	if withSeen {
		body = body[1:]
	}
	l, k := binary.Uvarint(body)
	if k <= 0 || l == 0 || uint64(len(body)-k) < l {
		return fr, false
	}
	fr.id, body = string(body[k:k+int(l)]), body[k+int(l):]
	if withSeen {
		n, k := binary.Uvarint(body)
		if k <= 0 || uint64(len(body)-k)/8 < n {
			return fr, false
		}
		body = body[k:]
		fr.seen = make([]uint64, n)
		for i := range fr.seen {
			fr.seen[i] = binary.LittleEndian.Uint64(body[8*i:])
		}
		body = body[8*n:]
	}
	fr.entries = body
	return fr, true
}

// writeCountsLog writes a log holding frames (their bodies), the first at
// position base, atomically.
func writeCountsLog(path string, base int64, frames []receivedFrame) error {
	head := binary.LittleEndian.AppendUint64([]byte(receivedMagic), uint64(base))
	return framelog.Rewrite(path, head, true, func(put func([]byte) error) error {
		for _, fr := range frames {
			if err := put(receivedBody(fr.id, fr.seen, fr.entries)); err != nil {
				return err
			}
		}
		return nil
	})
}

// receivedBody returns a frame's body.
func receivedBody(id string, seen []uint64, entries []byte) []byte {
	var body []byte
	if len(seen) > 0 {
		body = append(body, 0)
	}
	body = binary.AppendUvarint(body, uint64(len(id)))
	body = append(body, id...)
	if len(seen) > 0 {
		body = binary.AppendUvarint(body, uint64(len(seen)))
		for _, h := range seen {
			body = binary.LittleEndian.AppendUint64(body, h)
		}
	}
	return append(body, entries...)
}

func appendReceivedFrame(dst []byte, id string, seen []uint64, entries []byte) []byte {
	return framelog.Append(dst, receivedBody(id, seen, entries))
}

// apply makes the seen hashes (already in the sieve) and the counts of
// part id durable, then adds the counts (add); a part whose id the log
// holds already is not added again. A negative count takes off.
func (l *countsLog) apply(id string, seen []uint64, counts map[uint64]int64, add func(map[uint64]int64)) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ids[id] {
		return nil
	}
	var entries []byte
	for _, k := range slices.Sorted(maps.Keys(counts)) {
		if c := counts[k]; c != 0 {
			entries = frontier.AppendCount(entries, k, c)
		}
	}
	pos := l.w.End()
	if _, err := l.w.Write(appendReceivedFrame(nil, id, seen, entries)); err != nil {
		return fmt.Errorf("agent: %s: %w", l.path, err)
	}
	if err := l.w.SyncNow(); err != nil { // keeping mu: hold waits for the counts' addition
		return fmt.Errorf("agent: %s: %w", l.path, err)
	}
	l.frames = append(l.frames, frameMark{pos: pos, id: id, full: len(entries) > 0 || len(seen) > 0})
	l.ids[id] = true
	add(counts)
	return nil
}

// has reports whether the log holds part id's counts.
func (l *countsLog) has(id string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ids[id]
}

// hold stops apply until the returned release, and returns the position
// the counts added so far reach: a checkpoint takes its counts in between.
// A frame apply wrote and could not make durable is past that position
// (its counts were not added): a recovery replays it.
func (l *countsLog) hold() (pos int64, release func()) {
	l.mu.Lock()
	return l.w.Durable(), l.mu.Unlock
}

// trim drops the frames before pos (the position the oldest kept
// checkpoint covers), keeping the ids of the newest maxIDs of them
// in frames without entries just before the others.
func (l *countsLog) trim(pos int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	before := 0
	full := false
	for _, m := range l.frames {
		if m.pos >= pos {
			break
		}
		before++
		full = full || m.full
	}
	if !full && before <= l.maxIDs {
		return nil // only ids before pos, within the bound: nothing to drop
	}
	_, frames, _, err := readCountsLog(l.path)
	if err != nil {
		return err
	}
	var ids, kept []receivedFrame
	for _, fr := range frames {
		if fr.pos < pos {
			ids = append(ids, receivedFrame{id: fr.id})
		} else {
			kept = append(kept, fr)
		}
	}
	ids = ids[max(len(ids)-l.maxIDs, 0):]
	first := l.w.End()
	if len(kept) > 0 {
		first = kept[0].pos
	}
	base := first
	for _, fr := range ids {
		base -= int64(len(appendReceivedFrame(nil, fr.id, nil, nil)))
	}
	if base < l.base {
		return fmt.Errorf("agent: %s: the ids kept would not fit before position %d", l.path, first)
	}
	out := append(ids, kept...)
	if err := writeCountsLog(l.path, base, out); err != nil {
		return err
	}
	p := base
	for i := range out {
		out[i].pos = p
		p += int64(len(appendReceivedFrame(nil, out[i].id, out[i].seen, out[i].entries)))
	}
	old := l.w
	if err := l.open(base, p-base+int64(receivedHead)); err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	old.Close()
	l.mark(out)
	return nil
}

// closeReceived closes the log of received counts, if it was opened.
func (h *clusterHost) closeReceived() error {
	if h == nil {
		return nil
	}
	h.ho.countsOnce.Do(func() {}) // orders the read after an open
	if h.ho.counts == nil {
		return nil
	}
	return h.ho.counts.close()
}

// writeReceivedPos records in checkpoint folder dir the log position its
// sieve and counts cover.
func writeReceivedPos(dir string, pos int64) error {
	return writePos(filepath.Join(dir, receivedPosFile), pos)
}

// readReceivedPos returns the position checkpoint folder dir covers; 0
// when it records none (no part was received before it).
func readReceivedPos(dir string) int64 {
	pos, _ := readPos(filepath.Join(dir, receivedPosFile))
	return pos
}

// writePos writes a log position (uint64 little-endian) to path.
func writePos(path string, pos int64) error {
	return atomicfile.WriteBytes(path, binary.LittleEndian.AppendUint64(nil, uint64(pos)), atomicfile.Options{Sync: true})
}

// readPos reads the log position at path; ok is false when there is none.
func readPos(path string) (pos int64, ok bool) {
	b, err := os.ReadFile(path)
	if err != nil || len(b) != 8 {
		return 0, false
	}
	return int64(binary.LittleEndian.Uint64(b)), true
}

// restoreSeenAndCounts puts checkpoint folder cp's sieve and counts into
// state (whose sieve folder is gone), then adds the counts the log
// received after cp, and leaves cp's position for the sieve's next open
// to insert the seen hashes received after it (replayReceivedSeen); it
// returns how many parts' counts it added.
func restoreSeenAndCounts(cp, state string) (int, error) {
	if err := copyTree(filepath.Join(cp, "sieve"), filepath.Join(state, "sieve")); err != nil {
		return 0, fmt.Errorf("agent: restore sieve: %w", err)
	}
	if err := copyFile(filepath.Join(cp, "counts"), filepath.Join(state, "counts")); err != nil {
		return 0, fmt.Errorf("agent: restore counts: %w", err)
	}
	n, err := replayReceivedCounts(state, cp)
	if err != nil {
		return 0, fmt.Errorf("agent: restore counts received: %w", err)
	}
	if err := rechecksum(filepath.Join(state, "counts")); err != nil {
		return 0, fmt.Errorf("agent: restore counts: %w", err)
	}
	if err := writePos(filepath.Join(state, replayFile), readReceivedPos(cp)); err != nil {
		return 0, fmt.Errorf("agent: restore seen hashes received: %w", err)
	}
	return n, nil
}

// replayReceivedSeen inserts into s (the sieve of state, just opened) the
// seen hashes of the log's frames from the position crash recovery left
// in state/received.replay, then removes that file; without one it does
// nothing. It runs before the sieve is in use.
func replayReceivedSeen(s interface {
	InsertHashes([]uint64) (uint64, error)
}, state string, log *slog.Logger) error {
	marker := filepath.Join(state, replayFile)
	pos, ok := readPos(marker)
	if !ok {
		return nil
	}
	_, frames, _, err := readCountsLog(filepath.Join(state, receivedFile))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("agent: replay seen hashes received: %w", err)
	}
	var seen []uint64
	parts := 0
	for _, fr := range frames {
		if fr.pos >= pos && len(fr.seen) > 0 {
			seen = append(seen, fr.seen...)
			parts++
		}
	}
	if _, err := s.InsertHashes(seen); err != nil { // committed on return
		return fmt.Errorf("agent: replay seen hashes received: %w", err)
	}
	if parts > 0 {
		log.Info("crash recovery: seen hashes of hand-off parts received after the checkpoint put back into the sieve", "parts", parts, "hashes", len(seen))
	}
	return os.Remove(marker)
}

// replayReceivedCounts adds to state's counts file (restored from
// checkpoint folder cp) the log's counts received after cp's position.
func replayReceivedCounts(state, cp string) (int, error) {
	_, frames, _, err := readCountsLog(filepath.Join(state, receivedFile))
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	pos := readReceivedPos(cp)
	f, err := os.OpenFile(filepath.Join(state, "counts"), os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return 0, fmt.Errorf("agent: %w", err)
	}
	w := bufio.NewWriter(f)
	n := 0
	for _, fr := range frames {
		if fr.pos >= pos && len(fr.entries) > 0 {
			w.Write(fr.entries) // the counts file's reader adds repeated keys
			n++
		}
	}
	err = w.Flush()
	if err == nil {
		err = f.Sync()
	}
	return n, errors.Join(err, f.Close())
}

// receivedCounts returns this agent's log of received counts, opened at
// the first use.
func (h *clusterHost) receivedCounts() (*countsLog, error) {
	h.ho.countsOnce.Do(func() {
		h.ho.counts, h.ho.countsErr = openCountsLog(filepath.Join(h.a.cfg.Dir, "state", receivedFile))
	})
	return h.ho.counts, h.ho.countsErr
}

// checkpointFrontier takes the frontier's part of a checkpoint into
// folder dir while no count received is added, and records there the
// position in the log of received counts that its counts cover.
func (a *Agent) checkpointFrontier(ctx context.Context, sink frontier.CheckpointSink, dir string) (frontier.CheckpointInfo, error) {
	if a.clusterHost == nil {
		return a.frontier.Checkpoint(ctx, sink)
	}
	l, err := a.clusterHost.receivedCounts()
	if err != nil {
		return frontier.CheckpointInfo{}, err
	}
	pos, release := l.hold()
	info, err := a.frontier.Checkpoint(ctx, sink)
	release()
	if err != nil {
		return info, err
	}
	return info, writeReceivedPos(dir, pos)
}

// trimReceived drops the frames of the log that no kept checkpoint needs.
func (a *Agent) trimReceived() {
	if a.clusterHost == nil {
		return
	}
	names := listCheckpoints(a.checkpointsDir())
	l, err := a.clusterHost.receivedCounts()
	if err != nil || len(names) == 0 {
		return
	}
	if err := l.trim(readReceivedPos(filepath.Join(a.checkpointsDir(), names[0]))); err != nil {
		a.log.Warn("agent: trim the log of received counts", "err", err)
	}
}
