package coord

import (
	"context"
	"errors"
	"time"
)

// ErrFenced is the cause of a context ended by the fence: the agent's
// lease may have expired in etcd, so another agent may own its keys.
var ErrFenced = errors.New("coord: the agent's lease is not known to be live (coordinators unreachable)")

// Live reports whether the lease is certainly live at now.
func (l *Lease) Live(now time.Time) bool {
	until, _ := l.Until()
	return now.Before(until)
}

// Context returns a context ended, with cause ErrFenced, when the fence
// passes without renewal: requests run under it are cut when the agent
// can no longer be sure it owns their keys.
func (l *Lease) Context(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	go func() {
		t := time.NewTimer(0)
		defer t.Stop()
		for {
			until, renewed := l.Until()
			if !time.Now().Before(until) {
				cancel(ErrFenced)
				return
			}
			t.Reset(time.Until(until))
			select {
			case <-ctx.Done():
				return
			case <-renewed:
			case <-l.Lost():
			case <-t.C:
			}
		}
	}()
	return ctx, func() { cancel(context.Canceled) }
}

// WaitLive blocks until the lease is certainly live or ctx ends.
func (l *Lease) WaitLive(ctx context.Context) error {
	for {
		until, renewed := l.Until()
		if time.Now().Before(until) {
			return nil
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-l.Lost():
			return l.Err()
		case <-renewed:
		}
	}
}
