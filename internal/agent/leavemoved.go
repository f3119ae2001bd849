package agent

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/petrel-crawler/petrel/internal/atomicfile"
	"github.com/petrel-crawler/petrel/internal/cluster"
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
// The log: frames of uvarint(len(body)), body, CRC-32C of body (4 bytes,
// little-endian); a body is batches, each uvarint(len(dest)), dest,
// uvarint(len(wire)), wire. A torn last frame is cut off when the log is
// read. The log is removed once the leave is done, and at a start that is
// not leaving.

const (
	movedLogFile   = "leave.moved"
	movedHoldBytes = 4 << 20
)

// movedLog is the clusterHost's log of a leave's moved URLs.
type movedLog struct {
	mu    sync.Mutex
	f     *os.File
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
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	m := &h.ho.moved
	good, err := readMovedLog(b, func(p cluster.OutPut) error {
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
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if good < len(b) {
		if err := os.Truncate(path, int64(good)); err != nil {
			return err
		}
	}
	slices.Sort(m.drop)
	h.a.log.Info("cluster: leave: URLs moved out by an earlier process", "batches", len(m.again), "urls", len(m.drop))
	return nil
}

// appendMovedFrame appends to dst the log's frame of puts.
func appendMovedFrame(dst []byte, puts []cluster.OutPut) []byte {
	var body []byte
	for _, p := range puts {
		body = binary.AppendUvarint(body, uint64(len(p.Dest)))
		body = append(body, p.Dest...)
		body = binary.AppendUvarint(body, uint64(len(p.Wire)))
		body = append(body, p.Wire...)
	}
	dst = binary.AppendUvarint(dst, uint64(len(body)))
	return binary.LittleEndian.AppendUint32(append(dst, body...), crc32.Checksum(body, crcTable))
}

// readMovedLog calls fn for each batch of the log's whole frames and
// returns the length of those frames.
func readMovedLog(b []byte, fn func(cluster.OutPut) error) (int, error) {
	p := 0
	for p < len(b) {
		l, k := binary.Uvarint(b[p:])
		if k <= 0 || p+k+int(l)+4 > len(b) {
			break // torn
		}
		body := b[p+k : p+k+int(l)]
		if binary.LittleEndian.Uint32(b[p+k+int(l):]) != crc32.Checksum(body, crcTable) {
			break
		}
		for q := body; len(q) > 0; {
			dest, rest, ok1 := cutUvarintBytes(q)
			wire, rest, ok2 := cutUvarintBytes(rest)
			if !ok1 || !ok2 {
				return p, errors.New("a frame's batch cut short")
			}
			if err := fn(cluster.OutPut{Dest: string(dest), Wire: wire}); err != nil {
				return p, err
			}
			q = rest
		}
		p += k + int(l) + 4
	}
	return p, nil
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
	if err := m.append(h.movedLogPath(), appendMovedFrame(nil, puts)); err != nil {
		return fmt.Errorf("cluster: leave: log of moved URLs: %w", err)
	}
	m.held, m.bytes = nil, 0
	return n.PutLogged(ctx, puts)
}

// append writes frame at the log's end and syncs it.
func (m *movedLog) append(path string, frame []byte) error {
	if m.f == nil {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			return err
		}
		if err := atomicfile.SyncDir(filepath.Dir(path)); err != nil {
			f.Close()
			return err
		}
		m.f = f
	}
	if _, err := m.f.Write(frame); err != nil {
		return err
	}
	return m.f.Sync()
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
	if m.f != nil {
		err = errors.Join(err, m.f.Close())
		m.f = nil
	}
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
