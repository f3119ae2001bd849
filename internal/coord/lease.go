package coord

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Lease is an agent's etcd lease, kept alive by its own loop so that it
// knows, by its own clock, until when the lease is certainly live in
// etcd: the time it sent its last acknowledged keep-alive (or grant),
// plus the TTL granted, minus Margin. etcd counts the TTL from its
// receipt of the keep-alive, which is later than the send, so the lease
// cannot expire in etcd before Until unless the two clocks' rates differ
// by more than Margin over a TTL.
//
// The agent starts a request only before Until (the fence); Lapsed is
// closed when Until passes without renewal or the lease is gone.
type Lease struct {
	cli    *clientv3.Client
	ID     clientv3.LeaseID
	TTL    time.Duration
	Margin time.Duration

	mu      sync.Mutex
	until   time.Time
	renewed chan struct{} // closed and replaced at every renewal
	lost    chan struct{} // closed once the lease is gone for good
	lostErr error
}

// GrantLease grants a lease of ttl and starts keeping it alive until ctx
// ends or the lease is revoked or lost.
func GrantLease(ctx context.Context, cli *clientv3.Client, ttl time.Duration) (*Lease, error) {
	sent := time.Now()
	resp, err := cli.Grant(ctx, int64(ttl/time.Second))
	if err != nil {
		return nil, err
	}
	// The fence's margin: a tenth of the TTL, and at least 200 ms.
	l := &Lease{cli: cli, ID: resp.ID, TTL: time.Duration(resp.TTL) * time.Second, Margin: max(ttl/10, 200*time.Millisecond),
		renewed: make(chan struct{}), lost: make(chan struct{})}
	l.until = sent.Add(l.TTL - l.Margin)
	go l.keep(ctx)
	return l, nil
}

// keep renews the lease every third of its TTL.
func (l *Lease) keep(ctx context.Context) {
	t := time.NewTicker(l.TTL / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			l.lose(context.Cause(ctx))
			return
		case <-l.lost:
			return
		case <-t.C:
		}
		sent := time.Now()
		rctx, cancel := context.WithTimeout(ctx, l.TTL/3)
		resp, err := l.cli.KeepAliveOnce(rctx, l.ID)
		cancel()
		switch {
		case errors.Is(err, rpctypes.ErrLeaseNotFound):
			l.lose(errLeaseGone)
			return
		case err == nil && resp.TTL > 0:
			l.renew(sent.Add(time.Duration(resp.TTL)*time.Second - l.Margin))
		}
	}
}

var errLeaseGone = errors.New("coord: the agent's lease expired in etcd")

func (l *Lease) renew(until time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if until.After(l.until) {
		l.until = until
	}
	close(l.renewed)
	l.renewed = make(chan struct{})
}

func (l *Lease) lose(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	select {
	case <-l.lost:
	default:
		l.lostErr = err
		l.until = time.Time{}
		close(l.lost)
	}
}

// Until returns the fence: the time before which the lease is certainly
// live, and a channel closed at its next renewal.
func (l *Lease) Until() (time.Time, <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.until, l.renewed
}

// Lost is closed once the lease is gone for good (expired in etcd,
// revoked, or its owner's context ended); Err then says why.
func (l *Lease) Lost() <-chan struct{} { return l.lost }

// Err returns why the lease was lost, or nil.
func (l *Lease) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lostErr
}

// Revoke ends the lease in etcd at once: its keys are deleted, which the
// others read as a clean leave.
func (l *Lease) Revoke(ctx context.Context) error {
	_, err := l.cli.Revoke(ctx, l.ID)
	l.lose(errors.New("coord: lease revoked"))
	return err
}

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
