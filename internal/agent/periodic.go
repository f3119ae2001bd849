package agent

import (
	"context"
	"time"

	"github.com/petrel-crawler/petrel/internal/clock"
)

// periodic fires every d on a clock, like a time.Ticker whose period can
// change (set) and which can be off (d ≤ 0). Owned by one goroutine: after
// each tick it receives from C, it calls again.
type periodic struct {
	clock clock.Clock
	t     clock.Timer
	d     time.Duration
}

// set makes it fire d from now and then every d; d ≤ 0 turns it off.
func (p *periodic) set(d time.Duration) {
	p.d = d
	if p.t != nil {
		p.t.Stop()
	}
	if d <= 0 {
		return
	}
	if p.t == nil {
		p.t = p.clock.NewTimer(d)
	} else {
		p.t.Reset(d)
	}
}

// again arms the next tick, d after now (call it on each tick received).
func (p *periodic) again() { p.set(p.d) }

// C is the channel its ticks come on (nil, never ready, while off).
func (p *periodic) C() <-chan time.Time {
	if p.d <= 0 {
		return nil
	}
	return p.t.C()
}

// stop turns it off for good.
func (p *periodic) stop() { p.set(0) }

// checkpointTimes runs take at once (so that a crash always has a
// checkpoint to go back to), then every interval on clk — the interval
// replaced by each value received from every (0: none) and counted from
// when it is received — and for each request received (a non-nil reply
// gets take's error), until ctx ends.
func checkpointTimes(ctx context.Context, clk clock.Clock, interval time.Duration, every <-chan time.Duration, requests <-chan chan error, take func() error) {
	take()
	p := periodic{clock: clk}
	p.set(interval)
	defer p.stop()
	for {
		select {
		case <-ctx.Done():
			return
		case d := <-every:
			p.set(d)
		case <-p.C():
			p.again()
			take()
		case reply := <-requests:
			err := take()
			if reply != nil {
				reply <- err
			}
		}
	}
}
