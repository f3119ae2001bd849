package agent

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/petrel-crawler/petrel/internal/cluster"
	"github.com/petrel-crawler/petrel/internal/framelog"
	"github.com/petrel-crawler/petrel/internal/frontier"
	"github.com/petrel-crawler/petrel/internal/sieve"
)

// The URLs a leave moves out, logged. While this agent leaves the crawl,
// every ready record it forwards (the queued URLs of the addresses it
// gives up, moved out of its frontier, and those that reach it later) is
// written to state/cluster/leave.moved in the batch it goes to the outbox
// in, fsynced before the outbox has it. A kill makes the next start
// recover a checkpoint that may still hold URLs moved since: that start
// puts the log's batches in the outbox again (a receiver applies a batch
// id once) and drops every ready record its frontier forwards whose URL
// the log holds, so no URL is moved twice (a second ready copy at its new
// owner, where no sieve stands before it, would be fetched twice).
//
// Records are held in RAM until a seal logs them (at movedHoldBytes, at
// the end of each step of the hand-off, and in every checkpoint before it
// commits). A record held and not logged has not been sent: a kill loses
// it only with a checkpoint that no longer has it, and no checkpoint
// commits with records held.
//
// The log: movedMagic, then frames (package framelog) whose body is
// batches, each uvarint(len(dest)), dest, uvarint(len(wire)), wire. A torn
// last frame is cut off when the log is read. The log is removed once the
// leave is done, and at a start that is not leaving. A log of an earlier
// format (no magic) stops the start with its path.

const (
	movedLogFile   = "leave.moved"
	movedMagic     = "PLMOVED2\n"
	movedHoldBytes = 4 << 20
)

// movedLog is the clusterHost's log of a leave's moved URLs.
type movedLog struct {
	mu    sync.Mutex
	w     *framelog.Writer    // nil until the log is opened or started
	shut  bool                // closed (closeMovedLog): nothing more is logged
	held  map[string][][]byte // by destination
	bytes int
	seqs  map[string]uint64 // of the batches this process logged, per destination

	drop    []uint64         // sorted hashes of the URLs an earlier process logged
	again   []cluster.OutPut // its batches, put in the outbox again (putMovedAgain)
	dropped int64
}

func (h *clusterHost) movedLogPath() string {
	return filepath.Join(h.a.cfg.Dir, "state", "cluster", movedLogFile)
}

// openMovedLog reads, at a start, the log an earlier process left: kept
// when this agent is leaving still, removed otherwise.
func (h *clusterHost) openMovedLog() error {
	path := h.movedLogPath()
	if !h.a.node.IsLeaving() {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	m := &h.ho.moved
	good, err := readMovedLog(path, func(body []byte) error {
		return movedBatches(body, func(p cluster.OutPut) error {
			bt, err := cluster.DecodeBatch(p.Wire)
			if err != nil {
				return err
			}
			p.ID = bt.ID
			m.again = append(m.again, p)
			for _, rec := range bt.Records {
				m.drop = append(m.drop, h.readyHash(rec))
			}
			return nil
		})
	})
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	w := framelog.NewWriter(&m.mu, (*os.File).Sync)
	if err == nil {
		err = w.Open(path, good, 0)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	m.w = w
	slices.Sort(m.drop)
	h.a.log.Info("cluster: leave: URLs moved out by an earlier process", "batches", len(m.again), "urls", len(m.drop))
	return nil
}

// movedBody returns the body of the log's frame of puts.
func movedBody(puts []cluster.OutPut) []byte {
	var body []byte
	for _, p := range puts {
		body = binary.AppendUvarint(body, uint64(len(p.Dest)))
		body = append(body, p.Dest...)
		body = binary.AppendUvarint(body, uint64(len(p.Wire)))
		body = append(body, p.Wire...)
	}
	return body
}

// movedBatches calls fn with each batch of a frame's body.
func movedBatches(body []byte, fn func(cluster.OutPut) error) error {
	for q := body; len(q) > 0; {
		dest, rest, ok1 := cutUvarintBytes(q)
		wire, rest, ok2 := cutUvarintBytes(rest)
		if !ok1 || !ok2 {
			return errors.New("a frame's batch cut short")
		}
		if err := fn(cluster.OutPut{Dest: string(dest), Wire: slices.Clone(wire)}); err != nil {
			return err
		}
		q = rest
	}
	return nil
}

// readMovedLog calls fn with the body of each whole frame of the log at
// path and returns the length of the log up to the last one. A file
// shorter than movedMagic was killed as it was started and holds no
// frame: it is removed and reported as absent (os.ErrNotExist). A file
// that starts otherwise (the first version of the log, from an earlier
// build) is an error.
func readMovedLog(path string, fn func(body []byte) error) (int64, error) {
	head, good, _, err := framelog.Scan(path, movedMagic, len(movedMagic), math.MaxUint32, func(body []byte, _ int64) error { return fn(body) })
	if err == nil && head == nil {
		if err := os.Remove(path); err != nil {
			return 0, err
		}
		return 0, fmt.Errorf("%s: killed as it was started: %w", path, os.ErrNotExist)
	}
	return good, err
}

// cutUvarintBytes splits a uvarint-prefixed byte string off b.
func cutUvarintBytes(b []byte) (s, rest []byte, ok bool) {
	l, k := binary.Uvarint(b)
	if k <= 0 || uint64(len(b)-k) < l {
		return nil, nil, false
	}
	return b[k : k+int(l)], b[k+int(l):], true
}

// readyHash is the sieve hash of a ready or hand-over record's URL.
func (h *clusterHost) readyHash(rec []byte) uint64 {
	_, inner, _, err := frontier.SplitHandover(rec)
	if err != nil || len(inner) < frontier.MetaLen {
		return 0
	}
	url := inner[frontier.MetaLen:]
	return sieve.KeyHash(h.a.cfg.Frontier.Assign.GroupHash(url), url)
}

// logMoved takes a ready record this agent forwards to to while it is
// leaving: dropped when an earlier process logged its URL, held for the
// log otherwise. It reports whether it took rec.
func (h *clusterHost) logMoved(to string, rec []byte) (bool, error) {
	n := h.a.node
	if n == nil || !n.IsLeaving() {
		return false, nil
	}
	m := &h.ho.moved
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.drop) > 0 {
		if _, ok := slices.BinarySearch(m.drop, h.readyHash(rec)); ok {
			m.dropped++
			return true, nil
		}
	}
	if m.held == nil {
		m.held = map[string][][]byte{}
	}
	m.held[to] = append(m.held[to], slices.Clone(rec))
	if m.bytes += len(rec); m.bytes >= movedHoldBytes {
		return true, h.sealLocked(context.Background())
	}
	return true, nil
}

// sealMoved logs the records held and puts their batches in the outbox.
func (h *clusterHost) sealMoved(ctx context.Context) error {
	if h == nil || h.a.node == nil {
		return nil
	}
	m := &h.ho.moved
	m.mu.Lock()
	defer m.mu.Unlock()
	return h.sealLocked(ctx)
}

func (h *clusterHost) sealLocked(ctx context.Context) error {
	m := &h.ho.moved
	if len(m.held) == 0 {
		return nil
	}
	n := h.a.node
	if m.seqs == nil {
		m.seqs = map[string]uint64{}
	}
	puts := n.EncodeReady(n.LoggedIncarnation(), m.seqs, m.held)
	if err := m.append(h.movedLogPath(), movedBody(puts)); err != nil {
		return fmt.Errorf("cluster: leave: log of moved URLs: %w", err)
	}
	m.held, m.bytes = nil, 0
	return n.PutLogged(ctx, puts)
}

// append writes the frame of body at the log's end and syncs it, keeping
// m.mu; the first one starts the log.
func (m *movedLog) append(path string, body []byte) error {
	if m.shut {
		return errors.New("the log is closed")
	}
	if m.w == nil {
		w := framelog.NewWriter(&m.mu, (*os.File).Sync)
		if err := w.Start(path, movedMagic); err != nil {
			return err
		}
		m.w = w
	}
	if _, err := m.w.Write(framelog.Append(nil, body)); err != nil {
		return err
	}
	return m.w.SyncNow()
}

// putMovedAgain puts in the outbox the batches an earlier process logged.
func (h *clusterHost) putMovedAgain() {
	m := &h.ho.moved
	m.mu.Lock()
	again := m.again
	m.again = nil
	m.mu.Unlock()
	if err := h.a.node.PutLogged(context.Background(), again); err != nil {
		h.a.log.Error("cluster: leave: URLs moved out by an earlier process", "err", err)
	}
}

// closeMovedLog seals what is held and closes the log; once the leave is
// done, it removes it.
func (h *clusterHost) closeMovedLog(ctx context.Context) error {
	m := &h.ho.moved
	m.mu.Lock()
	defer m.mu.Unlock()
	err := h.sealLocked(ctx)
	if m.w != nil {
		err = errors.Join(err, m.w.Close())
		m.w = nil
	}
	m.shut = true
	if m.dropped > 0 {
		h.a.log.Info("cluster: leave: URLs not moved again, an earlier process had", "urls", m.dropped)
	}
	if !h.a.node.IsLeaving() {
		if rerr := os.Remove(h.movedLogPath()); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
			err = errors.Join(err, rerr)
		}
	}
	return err
}
