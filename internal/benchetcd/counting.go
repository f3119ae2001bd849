package benchetcd

import (
	"context"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// counts are the requests the simulated agents issued, all clients
// together. Writes are what goes through etcd's raft log: puts, deletes,
// transactions, lease grants and revocations. Keep-alives are answered
// by etcd's leader without a log entry.
type counts struct {
	puts, deletes, txns, grants, revokes atomic.Int64
	keepAlives, keepAliveStreams, gets   atomic.Int64
}

// Counts is a copy of counts at one time.
type Counts struct {
	Puts             int64 `json:"puts"`
	Deletes          int64 `json:"deletes"`
	Txns             int64 `json:"txns"`
	Grants           int64 `json:"lease_grants"`
	Revokes          int64 `json:"lease_revokes"`
	KeepAlives       int64 `json:"keep_alives"`
	KeepAliveStreams int64 `json:"keep_alive_streams"` // concurrency.Session's own stream (the writer's): its keep-alives are not counted
	Gets             int64 `json:"gets"`
}

func (c *counts) snapshot() Counts {
	return Counts{Puts: c.puts.Load(), Deletes: c.deletes.Load(), Txns: c.txns.Load(), Grants: c.grants.Load(),
		Revokes: c.revokes.Load(), KeepAlives: c.keepAlives.Load(), KeepAliveStreams: c.keepAliveStreams.Load(), Gets: c.gets.Load()}
}

// Writes is the number of requests that go through etcd's log.
func (c Counts) Writes() int64 { return c.Puts + c.Deletes + c.Txns + c.Grants + c.Revokes }

func (c Counts) minus(d Counts) Counts {
	return Counts{c.Puts - d.Puts, c.Deletes - d.Deletes, c.Txns - d.Txns, c.Grants - d.Grants,
		c.Revokes - d.Revokes, c.KeepAlives - d.KeepAlives, c.KeepAliveStreams - d.KeepAliveStreams, c.Gets - d.Gets}
}

// viewWrites records the views written: each successful transaction
// that puts the view key, by its revision, with the time its commit
// began and the value written.
type viewWrites struct {
	mu  sync.Mutex
	key string
	at  map[int64]viewWrite
}

type viewWrite struct {
	at  time.Time
	val string
}

func (v *viewWrites) add(rev int64, start time.Time, val string) {
	v.mu.Lock()
	v.at[rev] = viewWrite{at: start, val: val}
	v.mu.Unlock()
}

// between returns the views written in [from, to), by revision, and how
// many of them repeat the value of the view written before them.
func (v *viewWrites) between(from, to time.Time) (map[int64]time.Time, int) {
	v.mu.Lock()
	defer v.mu.Unlock()
	revs := slices.Sorted(maps.Keys(v.at))
	out := map[int64]time.Time{}
	same := 0
	for i, rev := range revs {
		w := v.at[rev]
		if w.at.Before(from) || !w.at.Before(to) {
			continue
		}
		out[rev] = w.at
		if i > 0 && v.at[revs[i-1]].val == w.val {
			same++
		}
	}
	return out, same
}

// instrument replaces cli's KV and Lease by counting wrappers.
func instrument(cli *clientv3.Client, n *counts, views *viewWrites) {
	cli.KV = countingKV{KV: cli.KV, n: n, views: views}
	cli.Lease = countingLease{Lease: cli.Lease, n: n}
}

type countingKV struct {
	clientv3.KV
	n     *counts
	views *viewWrites
}

func (k countingKV) Put(ctx context.Context, key, val string, opts ...clientv3.OpOption) (*clientv3.PutResponse, error) {
	k.n.puts.Add(1)
	return k.KV.Put(ctx, key, val, opts...)
}

func (k countingKV) Get(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	k.n.gets.Add(1)
	return k.KV.Get(ctx, key, opts...)
}

func (k countingKV) Delete(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.DeleteResponse, error) {
	k.n.deletes.Add(1)
	return k.KV.Delete(ctx, key, opts...)
}

func (k countingKV) Do(ctx context.Context, op clientv3.Op) (clientv3.OpResponse, error) {
	switch {
	case op.IsPut():
		k.n.puts.Add(1)
	case op.IsDelete():
		k.n.deletes.Add(1)
	case op.IsTxn():
		k.n.txns.Add(1)
	case op.IsGet():
		k.n.gets.Add(1)
	}
	return k.KV.Do(ctx, op)
}

func (k countingKV) Txn(ctx context.Context) clientv3.Txn {
	return &countingTxn{Txn: k.KV.Txn(ctx), kv: k}
}

// countingTxn counts a transaction at its commit and records it in
// views when it put the view key and succeeded.
type countingTxn struct {
	clientv3.Txn
	kv   countingKV
	view string // the value put at the view key, if one is
}

func (t *countingTxn) If(cs ...clientv3.Cmp) clientv3.Txn {
	t.Txn = t.Txn.If(cs...)
	return t
}

func (t *countingTxn) Then(ops ...clientv3.Op) clientv3.Txn {
	t.note(ops)
	t.Txn = t.Txn.Then(ops...)
	return t
}

func (t *countingTxn) Else(ops ...clientv3.Op) clientv3.Txn {
	t.Txn = t.Txn.Else(ops...)
	return t
}

func (t *countingTxn) note(ops []clientv3.Op) {
	for _, op := range ops {
		if op.IsPut() && string(op.KeyBytes()) == t.kv.views.key {
			t.view = string(op.ValueBytes())
		}
	}
}

func (t *countingTxn) Commit() (*clientv3.TxnResponse, error) {
	t.kv.n.txns.Add(1)
	start := time.Now()
	resp, err := t.Txn.Commit()
	if err == nil && t.view != "" && resp.Succeeded {
		t.kv.views.add(resp.Header.Revision, start, t.view)
	}
	return resp, err
}

type countingLease struct {
	clientv3.Lease
	n *counts
}

func (l countingLease) Grant(ctx context.Context, ttl int64) (*clientv3.LeaseGrantResponse, error) {
	l.n.grants.Add(1)
	return l.Lease.Grant(ctx, ttl)
}

func (l countingLease) Revoke(ctx context.Context, id clientv3.LeaseID) (*clientv3.LeaseRevokeResponse, error) {
	l.n.revokes.Add(1)
	return l.Lease.Revoke(ctx, id)
}

func (l countingLease) KeepAliveOnce(ctx context.Context, id clientv3.LeaseID) (*clientv3.LeaseKeepAliveResponse, error) {
	l.n.keepAlives.Add(1)
	return l.Lease.KeepAliveOnce(ctx, id)
}

func (l countingLease) KeepAlive(ctx context.Context, id clientv3.LeaseID) (<-chan *clientv3.LeaseKeepAliveResponse, error) {
	l.n.keepAliveStreams.Add(1)
	return l.Lease.KeepAlive(ctx, id)
}
