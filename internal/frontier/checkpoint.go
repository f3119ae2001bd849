package frontier

import (
	"context"
	"fmt"
	"time"
)

// CheckpointSink receives a consistent snapshot of the frontier.
// The frontier calls its methods in this order, from the scheduler
// goroutine, while no URL leaves the ready queue:
//
//  1. MarkReady: the ready queue is quiescent: record its position. URLs
//     the sieve adds to it from now on are also given to WriteTodo.
//  2. WriteTodo, for every URL that must be fetched after a restore: the
//     URLs held by visit states (in RAM, retried or virtualized), the one
//     held back by the distributor, those parked on a host being resolved
//     (ip policy), the tasks in flight and the tasks whose
//     results are still being parsed (their links may not have reached the
//     sieve yet, so they are fetched again).
//  3. CheckpointSieve: flush the sieve and save its store. Every key the
//     saved store knows is then either done, or in the ready queue up to
//     the mark, or given to WriteTodo.
//  4. WriteTodo again for the URLs the flush added to the ready queue.
//
// Records given to WriteTodo are ready-queue records: Meta then URL.
//
// A sink that is also a HandoverCheckpointSink gets the keys' hand-over
// state in step 2 (handoverkeys.go).
//
// A sink that is also a VirtualCheckpointSink saves the virtualized URLs
// itself: in step 2 they are not given to WriteTodo, and CheckpointVirtual
// is called instead, after the other WriteTodo calls of step 2.
type CheckpointSink interface {
	MarkReady() error
	WriteTodo(rec []byte) error
	CheckpointSieve() error
}

// VirtualCheckpointSink is a CheckpointSink that checkpoints the
// virtualizer's files (for diskq.Queues: Checkpoint, hard links and an
// index), so that a snapshot costs what the visit states and the index
// hold rather than a copy of every virtualized URL. CheckpointVirtual gets
// every visit state not broken whose queue continues on disk; the
// virtualizer's records of other ids are to be ignored by a restore.
type VirtualCheckpointSink interface {
	CheckpointSink
	CheckpointVirtual(keys []VirtualKey) error
}

// VirtualKey is the virtualized part of one visit state's queue in a
// checkpoint. The virtualizer's records of ID are Meta then the URL without
// Prefix; the URL is Prefix followed by the rest.
type VirtualKey struct {
	ID     uint64
	Prefix string
	Count  int64 // records on disk
}

// CheckpointInfo describes a snapshot.
type CheckpointInfo struct {
	Todo    int64         // records given to WriteTodo
	Virtual int64         // virtualized records saved by CheckpointVirtual
	Pause   time.Duration // how long the scheduler stopped
	// Start is when the scheduler stopped. Unfinished counts the page
	// tasks given to WriteTodo because they were in flight or their
	// results were being parsed then: a restore fetches them again, as it
	// does every page whose fetch began after Start.
	Start      time.Time
	Unfinished int64
	// Dispatched is the count of page fetches held to MaxURLs as of
	// Start, less Unfinished: what a restore from this snapshot starts
	// counting from (Stats.PagesDispatched), since it fetches the
	// unfinished ones again.
	Dispatched int64
}

type checkpointReq struct {
	sink  CheckpointSink
	reply chan checkpointResp
}

type checkpointResp struct {
	info CheckpointInfo
	err  error
}

// Checkpoint takes a consistent snapshot through sink while Run is going
// on; the scheduler stops handing out tasks for its duration. It returns
// ctx's error if Run is not running or ctx ends first.
func (f *Frontier) Checkpoint(ctx context.Context, sink CheckpointSink) (CheckpointInfo, error) {
	req := checkpointReq{sink: sink, reply: make(chan checkpointResp, 1)}
	select {
	case f.checkpoints <- req:
	case <-ctx.Done():
		return CheckpointInfo{}, ctx.Err()
	}
	select {
	case r := <-req.reply:
		return r.info, r.err
	case <-ctx.Done():
		// The scheduler finishes the snapshot anyway; its reply is dropped.
		return CheckpointInfo{}, ctx.Err()
	}
}

// checkpoint runs a snapshot in the scheduler goroutine.
func (s *scheduler) checkpoint(sink CheckpointSink) (CheckpointInfo, error) {
	f := s.f
	start := f.clock.Now()
	info := CheckpointInfo{Start: start}
	todo := func(rec []byte) error {
		info.Todo++
		return sink.WriteTodo(rec)
	}
	f.readyMu.Lock()
	err := sink.MarkReady()
	if err == nil {
		f.capturing, f.captured = true, nil
	}
	f.readyMu.Unlock()
	if err != nil {
		return info, fmt.Errorf("frontier: checkpoint: mark ready queue: %w", err)
	}
	stopCapture := func() [][]byte {
		f.readyMu.Lock()
		defer f.readyMu.Unlock()
		c := f.captured
		f.capturing, f.captured = false, nil
		return c
	}
	vs, ownVirtual := sink.(VirtualCheckpointSink)
	if info.Unfinished, err = s.snapshotTodo(todo, !ownVirtual); err != nil {
		stopCapture()
		return info, fmt.Errorf("frontier: checkpoint: %w", err)
	}
	info.Dispatched = max(s.dispatched-info.Unfinished, 0)
	if hs, ok := sink.(HandoverCheckpointSink); ok {
		if err := hs.CheckpointHandovers(s.handoverKeys()); err != nil {
			stopCapture()
			return info, fmt.Errorf("frontier: checkpoint: hand-over keys: %w", err)
		}
	}
	if ownVirtual {
		keys := s.virtualKeys()
		for _, k := range keys {
			info.Virtual += k.Count
		}
		if err := vs.CheckpointVirtual(keys); err != nil {
			stopCapture()
			return info, fmt.Errorf("frontier: checkpoint: virtualizer: %w", err)
		}
	}
	if err := sink.CheckpointSieve(); err != nil {
		stopCapture()
		return info, fmt.Errorf("frontier: checkpoint: sieve: %w", err)
	}
	for _, rec := range stopCapture() {
		if err := todo(rec); err != nil {
			return info, fmt.Errorf("frontier: checkpoint: %w", err)
		}
	}
	s.robots.saveAll()
	info.Pause = f.clock.Now().Sub(start)
	return info, nil
}
