package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// The applier hands the inbox's batches to the host in log order. What it
// has applied is a log position and the set of batch ids applied, saved
// as applied.json at a clean close and in every checkpoint (CheckpointState):
// crash recovery restores the checkpoint's copy and the applier replays the
// log from there, skipping ids already applied.

type appliedState struct {
	Pos int64  `json:"pos"`
	IDs *idSet `json:"ids"`
}

func (n *Node) appliedPath() string { return filepath.Join(n.cfg.Dir, "applied.json") }

func (n *Node) loadApplied() error {
	b, err := os.ReadFile(n.appliedPath())
	if errors.Is(err, os.ErrNotExist) {
		return n.scanReceived(0)
	}
	if err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	st := appliedState{IDs: newIDSet()}
	if err := json.Unmarshal(b, &st); err != nil {
		return fmt.Errorf("cluster: %s: %w", n.appliedPath(), err)
	}
	n.applied = st.IDs
	n.appliedAt.Store(st.Pos)
	n.dedup = st.IDs.clone()
	return n.scanReceived(st.Pos)
}

// scanReceived adds the ids of the batches in the inbox after pos to the
// set of ids received.
func (n *Node) scanReceived(pos int64) error {
	return n.inbox.Read(pos, func(wire []byte, _ int64) error {
		if b, err := DecodeBatch(wire); err == nil {
			n.dedup.add(b.ID)
		}
		return nil
	})
}

// CheckpointState returns what a checkpoint must hold for the inbox to be
// replayed after it: call it while the applier is paused (PauseApply),
// at the same logical point as the frontier's checkpoint.
func (n *Node) CheckpointState() ([]byte, error) {
	return json.Marshal(appliedState{Pos: n.appliedAt.Load(), IDs: n.applied})
}

// RestoreCheckpointState writes a checkpoint's state as the one the next
// Start replays from (crash recovery, before Start).
func RestoreCheckpointState(dir string, state []byte) error {
	return writeDurable(filepath.Join(dir, "applied.json"), state)
}

// PauseApply stops the applier between two batches until ResumeApply.
func (n *Node) PauseApply() { n.applyMu.Lock() }

// ResumeApply ends PauseApply.
func (n *Node) ResumeApply() { n.applyMu.Unlock() }

// TrimInbox drops the inbox segments a checkpoint state covers.
func (n *Node) TrimInbox(state []byte) error {
	var st appliedState
	st.IDs = newIDSet()
	if err := json.Unmarshal(state, &st); err != nil {
		return err
	}
	return n.inbox.Trim(st.Pos)
}

func (n *Node) saveApplied() error {
	n.applyMu.Lock()
	defer n.applyMu.Unlock()
	st, err := n.CheckpointState()
	if err != nil {
		return err
	}
	return writeDurable(n.appliedPath(), st)
}

func (n *Node) applyLoop(ctx context.Context) {
	// Nothing is applied before the view's members are all here: the host
	// routes what it is given by the view.
	select {
	case <-n.ready:
	case <-ctx.Done():
		return
	}
	for ctx.Err() == nil {
		from := n.appliedAt.Load()
		if n.inbox.Wait(from, ctx.Done()) <= from {
			continue
		}
		var err error
		if b, next, ok := n.decoded.take(from); ok {
			err = n.applyBatch(b, nil, next) // on failure, read again from the inbox below
		} else {
			err = n.readApply(from)
		}
		if err != nil {
			n.log.Error("cluster: apply", "err", err)
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}
}

// readApply applies the inbox's batches from position from, up to its
// durable end or to a batch the decoded cache holds.
func (n *Node) readApply(from int64) error {
	err := n.inbox.Read(from, func(wire []byte, next int64) error {
		if err := n.applyOne(wire, next); err != nil {
			return err
		}
		if n.decoded.has(next) {
			return errDecoded // the rest was decoded at its arrival
		}
		return nil
	})
	n.decoded.dropBefore(n.appliedAt.Load())
	if errors.Is(err, errDecoded) {
		return nil
	}
	return err
}

// errDecoded stops a read of the inbox where the decoded cache takes over.
var errDecoded = errors.New("cluster: batch decoded at arrival")

// applyOne applies the batch of an inbox frame that ends at next.
func (n *Node) applyOne(wire []byte, next int64) error {
	b, err := DecodeBatch(wire)
	return n.applyBatch(b, err, next)
}

// waitOpenOrLeft blocks until the zombie guard opens, or this agent is
// out of its view as a leaving one (leftView: a guard closed at a start
// that resumes a leave opens only in a view with it, which does not
// come), or the node closes.
func (n *Node) waitOpenOrLeft() {
	for !n.leftView() {
		ctx, cancel := context.WithCancel(n.ctx)
		installed := n.vc.installed.Wait()
		go func() {
			select {
			case <-installed:
				cancel()
			case <-ctx.Done():
			}
		}()
		err := n.guard.WaitOpen(ctx)
		cancel()
		if err == nil || n.ctx.Err() != nil {
			return
		}
	}
}

// applyBatch hands a batch to the host unless it was applied before, and
// moves the applied position to next. A batch that did not decode (err)
// is skipped.
func (n *Node) applyBatch(b *Batch, err error, next int64) error {
	if err == nil && b.Kind == KindURLs && !n.leftView() {
		// A cut-off agent, or one declared dead, puts nothing through its
		// sieve: the interim owners of its keys may be admitting the same
		// URLs (guard.go). Its batches wait for its return to the view.
		// One that left (leave.go) owns no key: it forwards them.
		n.waitOpenOrLeft()
		if !n.leftView() {
			n.WaitReleases(n.ctx) // the sieve needs the old owners' seen sets first
		}
	}
	n.applyMu.Lock()
	defer n.applyMu.Unlock()
	if err == nil && !n.applied.has(b.ID) {
		if err := n.host.Apply(b); err != nil {
			return fmt.Errorf("batch %s: %w", b.ID, err)
		}
		n.applied.add(b.ID)
		n.counts.appliedBatches.Add(1)
		n.counts.appliedURLs.Add(uint64(len(b.Records)))
		n.activity.Add(1)
	}
	n.appliedAt.Store(next)
	n.appliedMoved.Notify()
	return nil
}
