package coord

import (
	"context"
	"maps"
	"strconv"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// State is a crawl's keys as one watch has read them up to Rev.
type State struct {
	Rev      int64
	View     View
	Settings Settings
	Stop     string // the stop's reason; "" while none
	Stopped  bool
	Ended    bool
	Probe    int64                  // the end's current wave (0: none)
	Agents   map[string]AgentRecord // live agents
	Revs     map[string]int64       // each live agent's key's modification revision
	Forget   map[string]bool        // absentees to drop
}

func (s State) clone() State {
	s.Agents, s.Revs, s.Forget = maps.Clone(s.Agents), maps.Clone(s.Revs), maps.Clone(s.Forget)
	return s
}

// Follow reads the crawl's keys and watches them until ctx ends. The
// channel holds the newest state only: a slow reader skips states, never
// an event's effect. It is closed when ctx ends.
func (c *Crawl) Follow(ctx context.Context) <-chan State {
	out := make(chan State, 1)
	go func() {
		defer close(out)
		retry := time.NewTimer(0)
		defer retry.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-retry.C:
			}
			c.follow(ctx, out)
			retry.Reset(200 * time.Millisecond)
		}
	}()
	return out
}

// follow reads the whole prefix, then applies the watch's events from
// the next revision, until the watch fails (compaction, no leader).
func (c *Crawl) follow(ctx context.Context, out chan State) {
	resp, err := c.cli.Get(ctx, c.prefix, clientv3.WithPrefix())
	if err != nil {
		return
	}
	st := State{Agents: map[string]AgentRecord{}, Revs: map[string]int64{}, Forget: map[string]bool{}}
	for _, kv := range resp.Kvs {
		c.apply(&st, false, kv.Key, kv.Value, kv.ModRevision)
	}
	st.Rev = resp.Header.Revision
	offer(out, st.clone())
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	for wr := range c.cli.Watch(wctx, c.prefix, clientv3.WithPrefix(), clientv3.WithRev(st.Rev+1)) {
		if wr.Err() != nil {
			return
		}
		for _, ev := range wr.Events {
			c.apply(&st, ev.Type == clientv3.EventTypeDelete, ev.Kv.Key, ev.Kv.Value, ev.Kv.ModRevision)
		}
		st.Rev = wr.Header.Revision
		offer(out, st.clone())
	}
}

// offer replaces whatever state out holds with st.
func offer(out chan State, st State) {
	select {
	case <-out:
	default:
	}
	out <- st
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
			st.Settings = s
		}
	case "stop":
		st.Stop, st.Stopped = string(val), !deleted
	case "end":
		st.Ended = !deleted
	case "probe":
		st.Probe, _ = strconv.ParseInt(string(val), 10, 64)
	case "agents":
		if deleted {
			delete(st.Agents, name)
			delete(st.Revs, name)
		} else if r, err := decode[AgentRecord](val); err == nil {
			st.Agents[name], st.Revs[name] = r, rev
		}
	case "forget":
		if deleted {
			delete(st.Forget, name)
		} else {
			st.Forget[name] = true
		}
	}
}
