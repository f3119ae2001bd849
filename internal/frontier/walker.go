package frontier

import (
	"errors"
	"fmt"
	"io"
)

// walkHeld gives fn the record (Meta, then URL) of every URL the scheduler
// holds and has not handed out: the distributor's held record, those parked
// for DNS, then the retries and RAM queue of every visit state not broken,
// then, with virtual, their virtualized records in one sequential pass of
// the virtualizer's files (in file order, which a compaction may have
// changed within a visit state). The slice given to fn is valid only
// during the call. It stops at fn's first error.
func (s *scheduler) walkHeld(fn func(rec []byte) error, virtual bool) error {
	if s.dist.held != nil {
		if err := fn(s.dist.held); err != nil {
			return err
		}
	}
	for _, h := range s.dns.hosts {
		for _, rec := range h.parked() {
			if err := fn(rec); err != nil {
				return err
			}
		}
	}
	var buf []byte
	var err error
	emit := func(v *visitState, r []byte) {
		if err == nil {
			buf = append(append(append(buf[:0], r[:MetaLen]...), v.prefix()...), r[MetaLen:]...)
			err = fn(buf)
		}
	}
	onDisk := map[uint64]*visitState{}
	for _, v := range s.states {
		if v.broken() {
			continue
		}
		for _, r := range v.retries() {
			emit(v, []byte(r.rec))
		}
		v.queue.each(func(r []byte) { emit(v, r) })
		if err != nil {
			return err
		}
		if v.onDisk > 0 && virtual {
			onDisk[v.id] = v
		}
	}
	if len(onDisk) == 0 {
		return nil
	}
	verr := s.f.cfg.Virtualizer.Snapshot(func(id uint64, r []byte) error {
		if v := onDisk[id]; v != nil {
			emit(v, r)
		}
		return err
	})
	if err != nil {
		return err
	}
	if verr != nil {
		return fmt.Errorf("virtualized URLs: %w", verr)
	}
	return nil
}

// snapshotTodo gives every URL the scheduler holds (the virtualized ones
// only with virtual), and every task not yet fully handled (in flight, or
// fetched and still being parsed), to todo. It returns how many of the
// latter were page tasks.
func (s *scheduler) snapshotTodo(todo func([]byte) error, virtual bool) (unfinished int64, err error) {
	f := s.f
	if err := s.walkHeld(todo, virtual); err != nil {
		return 0, err
	}
	var buf []byte
	task := func(t *Task) error {
		if t.Robots {
			return nil
		}
		unfinished++
		buf = t.Meta.Append(buf[:0])
		buf = append(append(buf, t.SchemeAuthority...), t.PathQuery...)
		return todo(buf)
	}
	for t := range s.flying {
		if err := task(t); err != nil {
			return unfinished, err
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
			return unfinished, err
		}
	}
	return unfinished, nil
}

// virtualKeys lists the visit states not broken with records on disk.
func (s *scheduler) virtualKeys() []VirtualKey {
	var keys []VirtualKey
	for _, v := range s.states {
		if v.onDisk > 0 && !v.broken() {
			keys = append(keys, VirtualKey{ID: v.id, Prefix: v.prefix(), Count: v.onDisk})
		}
	}
	return keys
}

// Close saves the frontier's queued URLs and closes the sieve. Call it after
// Run has returned and after every producer of Enqueue has stopped. URLs held
// by visit states (in RAM, retried, or virtualized), the one held back by
// the distributor and those parked on hosts being resolved go back to the
// ready queue (the sieve has already marked them seen), so that a crawl
// restarted on the same state resumes them.
func (f *Frontier) Close() error {
	s := f.sched
	s.robots.saveAll()
	var errs []error
	saved := 0
	f.readyMu.Lock()
	err := s.walkHeld(func(rec []byte) error {
		if err := f.cfg.Ready.Push(rec); err != nil {
			return fmt.Errorf("frontier: save queued URL: %w", err)
		}
		saved++
		return nil
	}, true)
	f.readyMu.Unlock()
	if err != nil {
		errs = append(errs, err)
	}
	s.dist.held = nil
	for _, h := range s.dns.hosts {
		h.takeParked()
	}
	for _, v := range s.states {
		v.queue, v.onDisk = pathQueue{}, 0
		v.setRetries(nil)
	}
	s.addQueued(-s.queuedURLs)
	s.queuedBytes, s.virtualized = 0, 0
	if saved > 0 {
		f.log.Info("frontier: queued URLs saved to the ready queue", "urls", saved)
	}
	if f.sieve != nil {
		if err := f.sieve.Close(); err != nil {
			errs = append(errs, fmt.Errorf("frontier: close sieve: %w", err))
		}
	}
	return errors.Join(errs...)
}

// SaveCounts writes the per-key URL counts (for resuming a crawl: see
// Config.Counts).
func (f *Frontier) SaveCounts(w io.Writer) error { return f.counts.writeTo(w) }
