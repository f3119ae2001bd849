package coord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Crawl is one crawl's keys in etcd, seen by one agent (or by a command
// such as cluster status). It is safe for concurrent use.
type Crawl struct {
	cli    *clientv3.Client
	prefix string
}

// NewCrawl returns the crawl named name on cli.
func NewCrawl(cli *clientv3.Client, name string) *Crawl {
	return &Crawl{cli: cli, prefix: Prefix(name)}
}

// Client returns the etcd client.
func (c *Crawl) Client() *clientv3.Client { return c.cli }

func (c *Crawl) key(parts ...string) string { return c.prefix + strings.Join(parts, "/") }

// ErrRefused wraps a refusal to admit an agent: its settings differ from
// the crawl's, or its name is taken by a live agent.
var ErrRefused = errors.New("refused")

// Admit checks id against the crawl's identity, writing it if this is the
// first agent (created). A difference is ErrRefused with the first one
// named.
func (c *Crawl) Admit(ctx context.Context, id Identity) (created bool, err error) {
	b, _ := json.Marshal(id)
	k := c.key("identity")
	resp, err := c.cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(k), "=", 0)).
		Then(clientv3.OpPut(k, string(b))).Else(clientv3.OpGet(k)).Commit()
	if err != nil {
		return false, err
	}
	if resp.Succeeded {
		return true, nil
	}
	kv := resp.Responses[0].GetResponseRange().Kvs[0]
	have, err := decode[Identity](kv.Value)
	if err != nil {
		return false, fmt.Errorf("coord: the crawl's identity in etcd is unreadable: %w", err)
	}
	if d := have.FirstDifference(id); d != "" {
		return false, fmt.Errorf("%w: %s", ErrRefused, d)
	}
	return false, nil
}

// Register puts rec under the lease: the agent is alive from now on. A
// live key of the same name under another lease is ErrRefused, except one
// under prior, this agent's own lease from before a restart, which is
// revoked first. It returns the revision of the registration, or, when
// refused, the revision at which the name was found held (for AwaitFree).
func (c *Crawl) Register(ctx context.Context, l *Lease, prior clientv3.LeaseID, rec AgentRecord) (int64, error) {
	k := c.key("agents", rec.Name)
	if prior != 0 && prior != l.ID {
		if resp, err := c.cli.Get(ctx, k); err == nil && len(resp.Kvs) == 1 && clientv3.LeaseID(resp.Kvs[0].Lease) == prior {
			c.cli.Revoke(ctx, prior)
		}
	}
	rec.Figures = Figures{}
	b, _ := json.Marshal(rec)
	resp, err := c.cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(k), "=", 0)).
		Then(clientv3.OpPut(k, string(b), clientv3.WithLease(l.ID))).Commit()
	if err != nil {
		return 0, err
	}
	if !resp.Succeeded {
		return resp.Header.Revision, fmt.Errorf("%w: an agent named %q is already alive in this crawl (its lease is live; a restart after a kill waits up to the lease's TTL, %s)", ErrRefused, rec.Name, l.TTL)
	}
	return resp.Header.Revision, nil
}

// AwaitFree waits until the agent key of name, held at revision rev (the
// revision a refused Register returned), is deleted: its lease expired or
// was revoked. It watches the key; it does not poll.
func (c *Crawl) AwaitFree(ctx context.Context, name string, rev int64) error {
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	for wr := range c.cli.Watch(wctx, c.key("agents", name), clientv3.WithRev(rev+1), clientv3.WithFilterPut()) {
		if err := wr.Err(); err != nil {
			return err
		}
		if len(wr.Events) > 0 {
			return nil
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return errors.New("coord: the watch of an agent's key ended")
}

// Publish replaces the agent's record (its exchange, its leave) under its
// lease. Every agent's watch sees it: call it when the record changes,
// not to publish figures (PublishFigures). rec.Figures is not written.
func (c *Crawl) Publish(ctx context.Context, l *Lease, rec AgentRecord) error {
	rec.Figures = Figures{}
	return c.putJSON(ctx, c.key("agents", rec.Name), rec, clientv3.WithLease(l.ID))
}

// PublishFigures replaces the agent's figures under its lease. Only the
// writer of views and status read them.
func (c *Crawl) PublishFigures(ctx context.Context, l *Lease, name string, f Figures) error {
	return c.putJSON(ctx, c.key("~figures", name), f, clientv3.WithLease(l.ID))
}

// putJSON puts v, as JSON, at key.
func (c *Crawl) putJSON(ctx context.Context, key string, v any, opts ...clientv3.OpOption) error {
	b, _ := json.Marshal(v)
	_, err := c.cli.Put(ctx, key, string(b), opts...)
	return err
}

func viewOf(b []byte, rev int64) (View, error) {
	r, err := decode[ViewRecord](b)
	if err != nil {
		return View{}, fmt.Errorf("coord: the view in etcd is unreadable: %w", err)
	}
	return View{ViewRecord: r, Rev: rev}, nil
}

// Stop writes the whole-crawl stop.
func (c *Crawl) Stop(ctx context.Context, reason string) error {
	_, err := c.cli.Put(ctx, c.key("stop"), reason)
	return err
}

// Forget asks the view's writer to drop name from the view's absentees,
// and returns the revision of the request.
func (c *Crawl) Forget(ctx context.Context, name string) (int64, error) {
	resp, err := c.cli.Put(ctx, c.key("forget", name), "")
	if err != nil {
		return 0, err
	}
	return resp.Header.Revision, nil
}

// ChangeSettings replaces the cluster-wide values with next if they are
// still those of revision rev (0: never written), and returns the
// revision of the write; ErrConflict if another change came first.
func (c *Crawl) ChangeSettings(ctx context.Context, rev int64, next map[string]any) (int64, error) {
	b, err := json.Marshal(Settings{Values: next})
	if err != nil {
		return 0, err
	}
	k := c.key("settings")
	resp, err := c.cli.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(k), "=", rev)).Then(clientv3.OpPut(k, string(b))).Commit()
	if err != nil {
		return 0, err
	}
	if !resp.Succeeded {
		return 0, ErrConflict
	}
	return resp.Header.Revision, nil
}

// Settings returns the cluster-wide values changed, with the revision of
// their last write (0: none).
func (c *Crawl) Settings(ctx context.Context) (Settings, error) {
	resp, err := c.cli.Get(ctx, c.key("settings"))
	if err != nil || len(resp.Kvs) == 0 {
		return Settings{}, err
	}
	s, err := decode[Settings](resp.Kvs[0].Value)
	s.Rev = resp.Kvs[0].ModRevision
	return s, err
}

// ErrConflict is returned by a conditional write that lost to another.
var ErrConflict = errors.New("coord: another change came first")

// PublishLast keeps rec, without a lease, as the agent's last figures:
// what a forget of it gives up once it is gone.
func (c *Crawl) PublishLast(ctx context.Context, rec AgentRecord) error {
	return c.putJSON(ctx, c.key("~last", rec.Name), rec)
}

// Leader returns the name of the agent elected to write views ("" if
// none).
func (c *Crawl) Leader(ctx context.Context) (string, error) {
	resp, err := c.cli.Get(ctx, c.key("election")+"/", clientv3.WithFirstCreate()...)
	if err != nil || len(resp.Kvs) == 0 {
		return "", err
	}
	return string(resp.Kvs[0].Value), nil
}
