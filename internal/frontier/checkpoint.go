package frontier

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// CheckpointSink receives a consistent snapshot of the frontier (issue 6).
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
type CheckpointSink interface {
	MarkReady() error
	WriteTodo(rec []byte) error
	CheckpointSieve() error
}

// CheckpointInfo describes a snapshot.
type CheckpointInfo struct {
	Todo  int64         // records given to WriteTodo
	Pause time.Duration // how long the scheduler stopped
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
	start := time.Now()
	var info CheckpointInfo
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
	if err := s.snapshotTodo(todo); err != nil {
		stopCapture()
		return info, fmt.Errorf("frontier: checkpoint: %w", err)
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
	info.Pause = time.Since(start)
	return info, nil
}

// snapshotTodo gives every URL the workbench holds, and every task not yet
// fully handled, to todo.
func (s *scheduler) snapshotTodo(todo func([]byte) error) error {
	f := s.f
	var buf []byte
	var errs []error
	emit := func(v *visitState, r []byte) {
		buf = append(append(append(buf[:0], r[:MetaLen]...), v.prefix...), r[MetaLen:]...)
		if err := todo(buf); err != nil {
			errs = append(errs, err)
		}
	}
	if s.held != nil {
		if err := todo(s.held); err != nil {
			return err
		}
	}
	for _, h := range s.hosts {
		for _, rec := range h.parked {
			if err := todo(rec); err != nil {
				return err
			}
		}
	}
	virtual := map[uint64]*visitState{}
	for _, v := range s.states {
		if v.broken {
			continue
		}
		for _, r := range v.retries {
			emit(v, []byte(r.rec))
		}
		v.queue.each(func(r []byte) { emit(v, r) })
		if v.onDisk > 0 {
			virtual[v.id] = v
		}
		if len(errs) > 0 {
			return errors.Join(errs...)
		}
	}
	if len(virtual) > 0 {
		// One sequential pass over the virtualizer's files.
		err := f.cfg.Virtualizer.Snapshot(func(id uint64, r []byte) error {
			if v := virtual[id]; v != nil {
				emit(v, r)
			}
			if len(errs) > 0 {
				return errors.Join(errs...)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("virtualized URLs: %w", err)
		}
	}
	task := func(t *Task) error {
		if t.Robots {
			return nil
		}
		buf = t.Meta.Append(buf[:0])
		buf = append(append(buf, t.SchemeAuthority...), t.PathQuery...)
		return todo(buf)
	}
	for t := range s.flying {
		if err := task(t); err != nil {
			return err
		}
	}
	f.parsingMu.Lock()
	parsing := make([]*Task, 0, len(f.parsing))
	for t := range f.parsing {
		parsing = append(parsing, t)
	}
	f.parsingMu.Unlock()
	for _, t := range parsing {
		if _, dup := s.flying[t]; dup {
			continue
		}
		if err := task(t); err != nil {
			return err
		}
	}
	return nil
}
