package coord

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// waveGap is the shortest time between two of the end's waves.
const waveGap = 100 * time.Millisecond

// Lead campaigns to be the crawl's one writer of views and, once elected,
// writes the views and the end that p and the crawl's state call for,
// until ctx ends or the lease is lost. Every write is a transaction
// conditioned on this agent's leadership, so a deposed writer writes
// nothing. log receives one line per decision, with attributes in
// slog's form.
func (c *Crawl) Lead(ctx context.Context, l *Lease, name string, p Policy, log func(msg string, args ...any)) error {
	sess, err := concurrency.NewSession(c.cli, concurrency.WithLease(l.ID), concurrency.WithContext(ctx))
	if err != nil {
		return err
	}
	e := concurrency.NewElection(sess, c.key("election"))
	if err := e.Campaign(ctx, name); err != nil {
		return err
	}
	log("elected to write the crawl's views", "agent", name)
	leader := clientv3.Compare(clientv3.CreateRevision(e.Key()), "=", e.Rev())
	w := newWriter(p)
	states := c.Follow(ctx)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	var st State
	var written int64 // the revision of this writer's last write
	for {
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-l.Lost():
			return l.Err()
		case s, ok := <-states:
			if !ok {
				return context.Cause(ctx)
			}
			st = s
		case <-timer.C:
		}
		now := time.Now()
		if st.Rev < written {
			continue // decide on a state that has this writer's last write
		}
		next, wake := w.nextView(st, now)
		if next != nil {
			b, _ := json.Marshal(next)
			ops := []clientv3.Op{clientv3.OpPut(c.key("view"), string(b))}
			var forgot []string
			for name := range st.Forget {
				if !next.Has(name) && !slices.Contains(next.Absent, name) {
					forgot = append(forgot, name)
					ops = append(ops, clientv3.OpDelete(c.key("forget", name)), clientv3.OpDelete(c.key("~last", name)))
				}
			}
			if resp, err := c.cli.Txn(ctx).If(leader).Then(ops...).Commit(); err == nil && resp.Succeeded {
				written = resp.Header.Revision
				log("view written: " + string(b))
				for _, name := range forgot {
					r, ok := st.Last[name]
					given, urls := GivenUp(r, ok)
					log("forgot agent "+name+": given up what only it held: "+given, "agent", name, "urls", urls)
				}
			}
		}
		ask, end := w.endStep(st, now, waveGap)
		switch {
		case end:
			c.writeEnd(ctx, leader, st, log)
		case ask > 0:
			if resp, err := c.cli.Txn(ctx).If(leader).Then(clientv3.OpPut(c.key("probe"), strconv.FormatInt(ask, 10))).Commit(); err == nil && resp.Succeeded {
				written = resp.Header.Revision
			}
		}
		timer.Reset(nextDecision(st, wake, now))
	}
}

// writeEnd writes the end if nothing under agents/ or ~figures/ and not
// the view changed since st was read.
func (c *Crawl) writeEnd(ctx context.Context, leader clientv3.Cmp, st State, log func(string, ...any)) {
	agents := clientv3.Compare(clientv3.ModRevision(c.key("agents")+"/"), "<", st.Rev+1).WithPrefix()
	figures := clientv3.Compare(clientv3.ModRevision(c.key("~figures")+"/"), "<", st.Rev+1).WithPrefix()
	view := clientv3.Compare(clientv3.ModRevision(c.key("view")), "=", st.View.Rev)
	resp, err := c.cli.Txn(ctx).If(leader, agents, figures, view).Then(clientv3.OpPut(c.key("end"), strconv.FormatInt(st.Rev, 10))).Commit()
	if err == nil && resp.Succeeded {
		log("the crawl is over: two waves found every agent idle and no batch in flight", "revision", resp.Header.Revision)
	}
}

// nextDecision returns how long to wait before deciding again without a
// change: until wake if set, a wave's gap while every agent is idle.
func nextDecision(st State, wake, now time.Time) time.Duration {
	d := time.Hour
	if !wake.IsZero() {
		d = max(wake.Sub(now), time.Millisecond)
	}
	if allIdle(st) && !st.Ended {
		d = min(d, waveGap)
	}
	return d
}
