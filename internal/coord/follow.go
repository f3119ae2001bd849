package coord

import (
	"context"
	"errors"
	"maps"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// State is a crawl's keys as one watch has read them up to Rev. A state
// from FollowFrom has no figures and no Last: an agent's watch leaves out
// the keys that change every few seconds per agent (records.go).
type State struct {
	Rev      int64
	View     View
	Settings Settings
	Stop     string // the stop's reason; "" while none
	Stopped  bool
	StopRev  int64 // the revision of the stop's write
	Ended    bool
	Probe    int64                  // the end's current wave (0: none)
	Agents   map[string]AgentRecord // live agents
	Revs     map[string]int64       // each live agent's key's modification revision
	Forget   map[string]bool        // absentees to drop
	Last     map[string]AgentRecord // each agent's last kept record (~last/NAME)
}

func (s State) clone() State {
	s.Agents, s.Revs, s.Forget, s.Last = maps.Clone(s.Agents), maps.Clone(s.Revs), maps.Clone(s.Forget), maps.Clone(s.Last)
	return s
}

// Follow reads the crawl's keys and watches them until ctx ends. The
// channel holds the newest state only: a slow reader skips states, never
// an event's effect. It is closed when ctx ends.
func (c *Crawl) Follow(ctx context.Context) <-chan State {
	out := make(chan State, 1)
	go c.run(ctx, 0, clientv3.GetPrefixRangeEnd(c.prefix), func(st State) bool {
		select {
		case <-out:
		default:
		}
		out <- st
		return true
	}, out)
	return out
}

// FollowFrom reads the crawl's keys but figures (those below
// AgentKeysEnd) as they were at revision from-1 and then delivers a state
// after every change of them from revision from on, in order, none
// skipped (a reader that needs every view, as an agent does);
// the watch waits for the reader. It is closed when ctx ends. Should the
// watch fail (a compaction past the reader), it starts again from the
// current revision, and a view may then be skipped.
func (c *Crawl) FollowFrom(ctx context.Context, from int64) <-chan State {
	out := make(chan State)
	go c.run(ctx, from, c.AgentKeysEnd(), func(st State) bool {
		select {
		case out <- st:
			return true
		case <-ctx.Done():
			return false
		}
	}, out)
	return out
}

// run follows the crawl until ctx ends, emitting states, and closes out.
// A reader of every change (from > 0) goes on after a failed watch from
// the revision after the last it was given; should that revision be
// compacted away, from the current one.
func (c *Crawl) run(ctx context.Context, from int64, end string, emit func(State) bool, out chan State) {
	defer close(out)
	each := from > 0
	retry := time.NewTimer(0)
	defer retry.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-retry.C:
		}
		last, compacted := c.follow(ctx, from, end, each, emit)
		switch {
		case !each:
		case compacted:
			from = 1
		case last > 0:
			from = last + 1
		}
		retry.Reset(200 * time.Millisecond)
	}
}

// Read returns the crawl's keys as one state, read now.
func (c *Crawl) Read(ctx context.Context) (State, error) {
	resp, err := c.cli.Get(ctx, c.prefix, clientv3.WithPrefix())
	if err != nil {
		return State{}, err
	}
	st := c.stateOf(resp)
	st.Rev = resp.Header.Revision
	return st, nil
}

// stateOf is the state of the keys a read returned; Rev is not set.
func (c *Crawl) stateOf(resp *clientv3.GetResponse) State {
	st := State{Agents: map[string]AgentRecord{}, Revs: map[string]int64{}, Forget: map[string]bool{}, Last: map[string]AgentRecord{}}
	for _, kv := range resp.Kvs {
		c.apply(&st, false, kv.Key, kv.Value, kv.ModRevision)
	}
	return st
}

// AgentKeysEnd is the end of the range of keys an agent follows: every
// key of the crawl but those that start with "~".
func (c *Crawl) AgentKeysEnd() string { return c.prefix + "~" }

// follow reads the keys from the prefix to end (at from-1, or now), then
// applies the watch's events one by one, until the watch fails
// (compaction, no leader). With each it emits once per event, else once per watch
// response. It returns the revision of the last state emitted, and
// whether from-1 was compacted away.
func (c *Crawl) follow(ctx context.Context, from int64, end string, each bool, emit func(State) bool) (last int64, compacted bool) {
	opts := []clientv3.OpOption{clientv3.WithRange(end)}
	if from > 1 {
		opts = append(opts, clientv3.WithRev(from-1))
	}
	resp, err := c.cli.Get(ctx, c.prefix, opts...)
	if errors.Is(err, rpctypes.ErrCompacted) {
		return 0, true
	}
	if err != nil {
		return 0, false
	}
	st := c.stateOf(resp)
	st.Rev = resp.Header.Revision
	if from > 1 {
		st.Rev = from - 1
	}
	if !emit(st.clone()) {
		return 0, false
	}
	last = st.Rev
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	for wr := range c.cli.Watch(wctx, c.prefix, clientv3.WithRange(end), clientv3.WithRev(st.Rev+1)) {
		if wr.Err() != nil {
			return last, wr.CompactRevision > 0
		}
		for _, ev := range wr.Events {
			c.apply(&st, ev.Type == clientv3.EventTypeDelete, ev.Kv.Key, ev.Kv.Value, ev.Kv.ModRevision)
			if each {
				st.Rev = ev.Kv.ModRevision
				if !emit(st.clone()) {
					return last, false
				}
				last = st.Rev
			}
		}
		st.Rev = max(st.Rev, wr.Header.Revision)
		if !each {
			if !emit(st.clone()) {
				return last, false
			}
			last = st.Rev
		}
	}
	return last, false
}

func (c *Crawl) apply(st *State, deleted bool, key, val []byte, rev int64) {
	k := strings.TrimPrefix(string(key), c.prefix)
	dir, name, _ := strings.Cut(k, "/")
	switch dir {
	case "view":
		if v, err := viewOf(val, rev); err == nil && !deleted {
			st.View = v
		}
	case "settings":
		if s, err := decode[Settings](val); err == nil && !deleted {
			s.Rev = rev
			st.Settings = s
		}
	case "stop":
		st.Stop, st.Stopped, st.StopRev = string(val), !deleted, rev
	case "end":
		st.Ended = !deleted
	case "probe":
		st.Probe, _ = strconv.ParseInt(string(val), 10, 64)
	case "agents":
		if deleted {
			delete(st.Agents, name)
			delete(st.Revs, name)
		} else if r, err := decode[AgentRecord](val); err == nil {
			r.Figures = st.Agents[name].Figures
			st.Agents[name], st.Revs[name] = r, rev
		}
	case "~figures":
		// Set only on a live record: the lease's end deletes both keys
		// at one revision, and a record without its key is not alive.
		if r, ok := st.Agents[name]; ok && !deleted {
			if f, err := decode[Figures](val); err == nil {
				r.Figures = f
				st.Agents[name] = r
			}
		}
	case "~last":
		if deleted {
			delete(st.Last, name)
		} else if r, err := decode[AgentRecord](val); err == nil {
			st.Last[name] = r
		}
	case "forget":
		if deleted {
			delete(st.Forget, name)
		} else {
			st.Forget[name] = true
		}
	}
}
