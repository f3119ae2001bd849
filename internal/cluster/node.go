package cluster

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/petrel-crawler/petrel/internal/coord"
	"github.com/petrel-crawler/petrel/internal/notify"
)

// Host is the agent a Node serves: its frontier, as the node sees it.
// Every method is required; the node calls them from its own goroutines.
type Host interface {
	// Apply puts a batch's records into the frontier: KindURLs into the
	// sieve, KindReady into the ready queue, KindRevisit into the revisit
	// schedule. It is called in inbox order, never concurrently.
	Apply(b *Batch) error
	// Idle reports whether the frontier has nothing queued, in flight or
	// being parsed, its sieve is flushed, and it sends no hand-off.
	Idle() bool
	// Stop asks for a clean stop of this agent (a whole-crawl stop, the
	// crawl's end, or a fatal error of the node). It must not block.
	Stop(reason string)
	// Progress returns figures for Status.
	Progress() Progress

	// Owner says which agent owns a record now ("" for this agent), for
	// re-routing the batches held for an agent that left the view
	// (death.go): for KindURLs the owner of its key's group, for
	// KindReady and KindRevisit the owner of its host's address.
	Owner(kind Kind, rec []byte) string

	// ViewChanged is called once per view installed after the first, in
	// increasing epoch order, never concurrently, just before the new
	// view is in force (View still returns the old one), once what it
	// makes this agent await and give is saved (handoffstate.go). It
	// must not block for long: hold c.Holds, start the hand-off of
	// c.Give and return.
	ViewChanged(c ViewChange)
	// ResumeHolds is called once by Start, before the exchange listens
	// (so before any release can arrive), with the holds a previous
	// process left awaiting their release and the earliest next request
	// of each address released recently (handoffstate.go).
	ResumeHolds(holds []PendingHold, notBefore map[string]time.Time)
	// ApplyHandoff makes a hand-off part durable in the host (seen hashes
	// in the sieve, counts) and, for a release, ends the hold of the
	// addresses that moved from h.From. It is called once per part id,
	// one part at a time (handoff.go).
	ApplyHandoff(h *Handoff) error

	// PrepareConfig checks that values (the crawl's changed cluster-wide
	// values after a change) can be applied, and applies nothing. Its
	// error is the refusal's reason (config.go).
	PrepareConfig(values map[string]any) error
	// CommitConfig applies values, which the crawl wrote under epoch. It
	// is called in increasing epoch order, never concurrently.
	CommitConfig(ctx context.Context, epoch uint64, values map[string]any) error

	// WhyJSON answers "why" for url as JSON: from this agent alone with
	// local, or, as the agent asked, from the agents it asks in turn
	// (why.go).
	WhyJSON(ctx context.Context, url string, local bool) ([]byte, error)
}

// Progress is the host's part of a Status.
type Progress struct {
	Fetched int64 `json:"fetched"` // pages fetched
	Queued  int64 `json:"queued"`  // URLs queued in the frontier
	// Forwarded is the URLs received for keys this agent no longer owns
	// and sent on to their owners.
	Forwarded int64 `json:"forwarded_urls"`
}

// Config is a Node's configuration.
type Config struct {
	Name         string         // the agent's name, unique in the crawl
	Bind         netip.AddrPort // the agent's address
	ExchangePort int            // the exchange's port on Bind's address (0: Bind's port + 1)
	Key          Key
	CrawlName    string // names the crawl's keys in etcd
	// Coordinators run the crawl's etcd, embedded in those agents (this
	// one runs a member if it is named); or, with none, Endpoints are an
	// external etcd cluster's client URLs.
	Coordinators []coord.Coordinator
	Endpoints    []string
	LeaseTTL     time.Duration // the agent's lease (0: 10 s)
	Settle       time.Duration // a join's wait for others before its view (0: 200 ms)
	Wait         int           // members needed before the view forms (≥ 1)
	Weight       uint32        // share of keys (0: 1)
	Dir          string        // the node's state directory (crawl's state/cluster)
	FinishedPath string        // the crawl's state/FINISHED
	Settings     [][2]string   // cluster-wide settings, compared at join

	BatchURLs   int           // records per batch (0: 4096)
	BatchDelay  time.Duration // oldest record's wait before its batch is sent (0: 200 ms)
	OutboxBytes int64         // per destination (0: 256 MiB)
	InboxBytes  int64         // (0: 1 GiB)
	Window      int           // batches in flight per destination (0: 8)
	Grace       time.Duration // after a member's lease expired, the wait before its keys move (0: 60 s)
	Transport   Transport     // carries batches and hand-off parts (nil: HTTP/2 over mutual TLS on ExchangeAddr)

	Logger *slog.Logger
}

// Node is one agent's part of a cluster: coordination on etcd, the ownership view,
// the exchange (server and senders), the durable outbox and inbox, and
// termination detection. Create it with Start; end it with Close.
type Node struct {
	cfg         Config
	log         *slog.Logger
	host        Host
	incarnation uint64

	co     coordState    // coordination.go
	nudge  chan struct{} // publish now (coordination.go)
	tr     Transport     // the exchange (transport.go)
	client *Client       // the exchange's control calls (status, why)
	outbox *Outbox
	inbox  *Inbox
	batch  *batcher
	guard  *Guard             // guard.go
	tried  batchSet[struct{}] // outbox batches sent at least once, not acknowledged (death.go)
	left   leftSeen           // agents that left the view, last seen alive (death.go)

	view     atomic.Pointer[View]
	vc       viewChange    // view changes (viewinstall.go)
	cc       liveConfig    // cluster-wide settings changes (config.go)
	ho       handoffs      // hand-offs (handoff.go)
	ready    chan struct{} // closed when the view's members are all here
	fatal    chan error    // refused at join
	finished chan struct{}
	finOnce  sync.Once
	stopOnce sync.Once

	closeOnce sync.Once
	closeErr  error

	leaving   atomic.Bool // leave.go: Leaving
	leaveDone atomic.Bool // leave.go: LeaveDone

	receiving atomic.Bool // batches are appended (false while stopping)
	dedup     *idSet      // ids in the inbox or applied
	applyMu   sync.Mutex  // held while a batch is applied (checkpoints take it)
	applied   *idSet      // ids applied
	appliedAt atomic.Int64
	// appliedMoved wakes StopReceiving when appliedAt moves (applier.go).
	appliedMoved notify.Signal
	activity     atomic.Uint64 // batches created or applied by this process

	counts  counters
	fence   viewFence     // the receiver's fence, the sender's refused batches (fence.go)
	decoded *decodedCache // batches decoded at their arrival, for the applier

	started time.Time

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// counters are the exchange's figures (Status).
type counters struct {
	sentBatches, sentURLs       atomic.Uint64
	appliedBatches, appliedURLs atomic.Uint64
	inboxBatches                atomic.Uint64
	refusedBatches              atomic.Uint64
	duplicateBatches            atomic.Uint64
	inboxFull                   atomic.Uint64
	sendErrors                  atomic.Uint64
	reroutedURLs                atomic.Uint64 // of batches for agents not in the view, re-routed (death.go)
	viewLagRefused              atomic.Uint64 // batches of ready URLs answered 503 until their view is installed (receive.go)
	staleRefused, staleRerouted atomic.Uint64 // batches refused for an older view; this sender's routed again (fence.go)
	staleRefusedParts           atomic.Uint64 // hand-off parts refused for an older view (fence.go)
	staleRefusedReleases        atomic.Uint64 // hand-off releases refused so
	staleRecut                  atomic.Uint64 // this sender's parts and releases refused so, cut again under its newer view
}

// ErrFinished is returned by Start when the crawl is already over.
var ErrFinished = errors.New("cluster: the crawl is finished (state/FINISHED)")

func (c *Config) setDefaults() {
	if c.ExchangePort == 0 {
		c.ExchangePort = int(c.Bind.Port()) + 1
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	c.Wait = max(c.Wait, 1)
	c.CrawlName = cmp.Or(c.CrawlName, "petrel")
	c.BatchURLs = positiveOr(c.BatchURLs, 4096)
	c.Window = positiveOr(c.Window, 8)
	c.BatchDelay = positiveOr(c.BatchDelay, 200*time.Millisecond)
	c.Grace = positiveOr(c.Grace, time.Minute)
	c.LeaseTTL = positiveOr(c.LeaseTTL, 10*time.Second)
	c.Settle = positiveOr(c.Settle, 200*time.Millisecond)
}

// orEmpty returns m, or an empty map if m is nil.
func orEmpty[K comparable, V any](m map[K]V) map[K]V {
	if m == nil {
		return map[K]V{}
	}
	return m
}

// positiveOr returns v if it is positive, else d.
func positiveOr[T int | time.Duration](v, d T) T {
	if v > 0 {
		return v
	}
	return d
}

// ExchangeAddr returns the exchange's address.
func (c *Config) ExchangeAddr() string {
	return netip.AddrPortFrom(c.Bind.Addr(), uint16(c.ExchangePort)).String()
}

// Start opens the node's state and listens on the exchange's address;
// Follow then starts following the crawl on etcd, and WaitReady tells
// when the node holds a view with it. It returns ErrFinished for a crawl
// that is over.
func Start(cfg Config, host Host) (*Node, error) {
	cfg.setDefaults()
	if !ValidName(cfg.Name) {
		return nil, fmt.Errorf("cluster: --agent %q: want 1 to 64 letters, digits, '.', '-' or '_'", cfg.Name)
	}
	if cfg.FinishedPath != "" {
		if _, err := os.Stat(cfg.FinishedPath); err == nil {
			return nil, ErrFinished
		}
	}
	n := &Node{cfg: cfg, log: cfg.Logger, host: host,
		ready: make(chan struct{}), fatal: make(chan error, 1), vc: viewChange{offered: make(chan struct{})},
		finished: make(chan struct{}), nudge: make(chan struct{}, 1),
		dedup: newIDSet(), applied: newIDSet(), decoded: newDecodedCache(decodedLimit)}
	n.ctx, n.cancel = context.WithCancel(context.Background())
	n.started = time.Now()
	ok := false
	defer func() {
		if !ok {
			n.closeParts()
		}
	}()
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	inc, err := bumpIncarnation(filepath.Join(cfg.Dir, "incarnation"))
	if err != nil {
		return nil, err
	}
	n.incarnation = inc
	if n.outbox, err = OpenOutbox(filepath.Join(cfg.Dir, "outbox"), cfg.OutboxBytes); err != nil {
		return nil, err
	}
	if n.inbox, err = OpenInbox(filepath.Join(cfg.Dir, "inbox"), cfg.InboxBytes); err != nil {
		return nil, err
	}
	if err := n.loadApplied(); err != nil {
		return nil, err
	}
	if err := n.loadConfig(); err != nil {
		return nil, err
	}
	if err := n.ho.load(cfg.Dir); err != nil {
		return nil, err
	}
	n.leaving.Store(n.ho.st.Leaving)   // leave.go: a leave to resume
	host.ResumeHolds(n.pendingHolds()) // before any release can arrive
	if n.client, err = NewClient(cfg.Key); err != nil {
		return nil, err
	}
	n.batch = newBatcher(n)
	if n.tr = cfg.Transport; n.tr == nil {
		n.tr = newHTTPTransport(cfg, n.client, n.controlHandler(), n.log)
	}
	if err := n.tr.Listen(n); err != nil {
		return nil, err
	}
	n.receiving.Store(true)
	if v, err := LoadView(cfg.Dir); err != nil {
		return nil, err
	} else if v != nil {
		n.view.Store(v)
	}
	n.startFence() // fence.go
	n.guard = newGuard(time.Now, n.leaseLive, func(reason string) {
		n.log.Warn("cluster: guard closed: no request starts until this agent's lease is live and its view read back", "reason", reason)
	})
	n.guard.Close("starting: no lease and no view read back yet")
	n.goLoop(n.applyLoop)
	n.goLoop(n.senderLoop)
	n.goLoop(n.batch.loop)
	ok = true
	return n, nil
}

func (n *Node) goLoop(f func(context.Context)) { n.wg.Go(func() { f(n.ctx) }) }

// ConnsRefused is the number of connections the exchange closed at once
// for being past MaxExchangeConns, with, on a coordinator, those its
// etcd member's client and peer ports closed past theirs.
func (n *Node) ConnsRefused() int64 {
	refused := n.tr.Refused()
	n.co.mu.Lock()
	if m := n.co.member; m != nil {
		client, peer := m.ConnsRefused()
		refused += client + peer
	}
	n.co.mu.Unlock()
	return refused
}

// bumpIncarnation counts this start: the file holds the number of the
// last start. It fails closed: a file that exists and does not hold a
// number stops the agent, for a counter started again at 1 would make
// the receivers drop this agent's new batches as already seen.
func bumpIncarnation(path string) (uint64, error) {
	inc, err := readNumber(path, "a count of starts", 1, "it counts this agent's starts and the other agents drop batches of a count they saw; restore it from a backup, or write a number above any this agent used")
	if err != nil {
		return 0, err
	}
	inc++
	if err := writeDurable(path, []byte(strconv.FormatUint(inc, 10)+"\n")); err != nil {
		return 0, fmt.Errorf("cluster: incarnation: %w", err)
	}
	return inc, nil
}

// readNumber reads a state file that holds one decimal number, what, no
// smaller than least: 0 when there is none. It fails closed: a file that
// cannot be read or holds no such number is an error naming it and saying
// what to do (fix).
func readNumber(path, what string, least uint64, fix string) (uint64, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("cluster: %w", err)
	}
	s := strings.TrimSpace(string(b))
	x, err := strconv.ParseUint(s, 10, 64)
	if err != nil || x < least || x > math.MaxInt64 {
		return 0, fmt.Errorf("cluster: %s is unreadable, it does not hold %s (%q): %s", path, what, s, fix)
	}
	return x, nil
}

// Name returns the agent's name.
func (n *Node) Name() string { return n.cfg.Name }

// View returns the current view (nil before it is known).
func (n *Node) View() *View { return n.view.Load() }

// OutboxLen returns the batches and bytes the durable outbox holds for
// every destination (sent, not yet acknowledged).
func (n *Node) OutboxLen() (batches int, bytes int64) { return n.outbox.Len() }

// OutboxChanged returns a channel closed when the outbox next changes.
func (n *Node) OutboxChanged() <-chan struct{} { return n.outbox.Changed() }

func (n *Node) viewEpoch() uint64 {
	if v := n.view.Load(); v != nil {
		return v.Epoch
	}
	return 0
}

// WaitReady blocks until the node has its view and every member of it is
// here with agreeing settings (fetch nothing before), and returns the
// view; an error if the crawl refused this agent or ctx ended.
func (n *Node) WaitReady(ctx context.Context) (*View, error) {
	select {
	case <-n.ready:
		return n.View(), nil
	case err := <-n.fatal:
		n.fatal <- err
		return nil, err
	case <-n.finished:
		return nil, ErrFinished
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (n *Node) isReady() bool { return closed(n.ready) }

// closed reports whether ch is closed.
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// Finished is closed when the crawl is over.
func (n *Node) Finished() <-chan struct{} { return n.finished }

// Follow starts following the crawl on etcd (coordination.go): views,
// settings, the stop and the end reach the host from then on. Call it
// once, when the host can take them (it holds the node).
func (n *Node) Follow() { n.goLoop(n.coordinate) }

// Context ends when Close begins: goroutines the node's host starts for
// the node's work end with it.
func (n *Node) Context() context.Context { return n.ctx }

// Route sends a record to dest (an agent of the view, not this one) in a
// batch of kind. It may wait while dest's outbox is full, until the node
// closes (then it returns the node's error: the record stays unrouted and
// the caller's checkpoint still holds it).
func (n *Node) Route(dest string, kind Kind, rec []byte) error {
	return n.batch.addAll(n.ctx, dest, kind, [][]byte{rec})
}

// RouteAll sends recs, in order, to dest in batches of kind, as Route
// does one by one but with one lock and buffer lookup for all of them.
// On an error, some of recs may have been routed.
func (n *Node) RouteAll(dest string, kind Kind, recs [][]byte) error {
	return n.batch.addAll(n.ctx, dest, kind, recs)
}

// Flush writes every buffered record to the outbox now (before a
// checkpoint, so that what the checkpoint counts as parsed is durable).
func (n *Node) Flush() error { return n.batch.flushOld(context.Background(), true) }

func (n *Node) fail(err error) {
	if n.isReady() {
		// After the start, nothing waits on fatal: the agent stops.
		n.log.Error("cluster: the agent stops", "err", err)
		n.requestStop(err.Error())
		return
	}
	select {
	case n.fatal <- err:
	default:
	}
}

func (n *Node) requestStop(reason string) {
	n.stopOnce.Do(func() {
		n.log.Info("cluster: stop", "reason", reason)
		n.host.Stop(reason)
	})
}

// finish records that the crawl is over: state/FINISHED, and
// Finished closed.
func (n *Node) finish(reason string) {
	n.finOnce.Do(func() {
		n.log.Info("cluster: crawl finished", "reason", reason)
		if n.cfg.FinishedPath != "" {
			if err := writeDurable(n.cfg.FinishedPath, []byte(time.Now().UTC().Format(time.RFC3339)+" "+reason+"\n")); err != nil {
				n.log.Error("cluster: write FINISHED", "err", err)
			}
		}
		close(n.finished)
	})
}

// StopReceiving makes the exchange refuse new batches (503: the senders
// keep them) and waits until every batch already in the inbox is applied.
// Call it when the agent stops, before its frontier closes.
func (n *Node) StopReceiving(ctx context.Context) error {
	n.receiving.Store(false)
	for {
		moved := n.appliedMoved.Wait()
		if n.appliedAt.Load() >= n.inbox.Durable() {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-moved:
		}
	}
}

// Close writes the buffered records to the outbox, tries for up to
// timeout to deliver the outbox, revokes the lease and closes everything.
// Undelivered batches stay in the outbox for the next start.
func (n *Node) Close(timeout time.Duration) error {
	n.receiving.Store(false)
	n.batch.closing.Store(true)
	err := n.Flush()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	n.waitOutbox(ctx, func() bool { return true })
	cancel()
	if b, bytes := n.outbox.Len(); b > 0 {
		n.log.Info("cluster: batches kept in the outbox for the next start", "batches", b, "bytes", bytes)
	}
	if serr := n.saveApplied(); err == nil {
		err = serr
	}
	// After the end every agent exits, the coordinators too: a revocation
	// could only wait on an etcd that is gone.
	if !closed(n.finished) {
		n.revokeLease()
	}
	return errors.Join(err, n.closeParts())
}

// closeParts ends the node's goroutines and closes its stores (once).
func (n *Node) closeParts() error {
	n.closeOnce.Do(func() {
		n.cancel()
		if n.tr != nil {
			n.tr.Close()
		}
		n.wg.Wait()
		if n.inbox != nil {
			n.closeErr = n.inbox.Close()
		}
		if n.outbox != nil {
			n.closeErr = errors.Join(n.closeErr, n.outbox.Close())
		}
		if n.client != nil {
			n.client.Close()
		}
	})
	return n.closeErr
}
