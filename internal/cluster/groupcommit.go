package cluster

import (
	"os"
	"sync"
)

// groupCommit lets the writers of one append-only log share its fsyncs:
// a writer that needs its frames durable either leads an fsync of
// everything written so far or waits for the one under way, which may
// cover it. Positions are the log's own (any measure that grows with each
// write). Its fields are guarded by the log's mutex, the one cond uses.
// A failed fsync is sticky: after it, no frame is reported durable again
// (an fsync that failed once may have dropped the dirty pages, so trying
// again proves nothing).
type groupCommit struct {
	cond    *sync.Cond
	syncing bool  // a leader is fsyncing, without the lock
	durable int64 // position up to which everything is fsynced
	err     error // the first failed fsync
}

func newGroupCommit(mu *sync.Mutex) groupCommit { return groupCommit{cond: sync.NewCond(mu)} }

// wait returns, with mu held as on entry, once position mine is durable or
// an fsync failed. head returns the file to fsync and the position its
// end is at (called with mu held); fsync does the sync (without mu).
func (g *groupCommit) wait(mu *sync.Mutex, mine int64, head func() (*os.File, int64), fsync func(*os.File) error) error {
	for g.durable < mine && g.err == nil {
		if g.syncing {
			g.cond.Wait() // the fsync under way may cover mine
			continue
		}
		g.syncing = true
		f, upTo := head()
		mu.Unlock()
		err := fsync(f)
		mu.Lock()
		g.syncing = false
		if err != nil {
			g.err = err
		} else {
			g.durable = max(g.durable, upTo)
		}
		g.cond.Broadcast()
	}
	return g.err
}

// settle, with mu held, waits for the fsync under way. It releases mu
// while it waits, so another writer may have changed the log (rolled it to
// a new file, or closed it) when it returns: a caller about to roll checks
// again whether it still must.
func (g *groupCommit) settle() {
	for g.syncing {
		g.cond.Wait()
	}
}

// syncNow, with mu held, waits for the fsync under way and fsyncs f
// (whose end is at upTo) itself, keeping mu: for a log about to leave f
// for a new file. f is taken before the wait: a caller that may race
// another roller settles first, so that f is still the log's file.
func (g *groupCommit) syncNow(f *os.File, upTo int64, fsync func(*os.File) error) error {
	for g.syncing {
		g.cond.Wait()
	}
	if g.err != nil {
		return g.err
	}
	err := fsync(f)
	if err != nil {
		g.err = err
	} else {
		g.durable = max(g.durable, upTo)
	}
	g.cond.Broadcast()
	return err
}
