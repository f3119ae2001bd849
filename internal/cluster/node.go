package cluster

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Host is the agent a Node serves: it applies received batches to its
// frontier and says whether its frontier is idle.
type Host interface {
	// Apply puts a batch's records into the frontier: KindURLs into the
	// sieve, KindReady into the ready queue. It is called in inbox order,
	// never concurrently.
	Apply(b *Batch) error
	// Idle reports whether the frontier has nothing queued, in flight or
	// being parsed, and its sieve is flushed.
	Idle() bool
	// Stop asks for a clean stop of this agent (a whole-crawl stop).
	Stop(reason string)
	// Progress returns figures for Status.
	Progress() Progress
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
	Bind         netip.AddrPort // membership address (gossip, UDP and TCP)
	ExchangePort int            // the exchange's port on Bind's address (0: Bind's port + 1)
	Join         []string       // membership addresses of agents already running
	Key          Key
	CrawlName    string      // gossip Label: agents of other crawls are not heard
	Wait         int         // members needed before the view forms (≥ 1)
	Weight       uint32      // share of keys (0: 1)
	Dir          string      // the node's state directory (crawl's state/cluster)
	FinishedPath string      // the crawl's state/FINISHED
	Timing       Timing      // failure detector timing
	Settings     [][2]string // cluster-wide settings, compared at join

	BatchURLs   int           // records per batch (0: 4096)
	BatchDelay  time.Duration // oldest record's wait before its batch is sent (0: 200 ms)
	OutboxBytes int64         // per destination (0: 256 MiB)
	InboxBytes  int64         // (0: 1 GiB)
	Window      int           // batches in flight per destination (0: 8)
	Grace       time.Duration // G (grace.go; 0: GraceBound with Petrel's default fetch timeout and delays)

	Logger *slog.Logger
}

// Node is one agent's part of a cluster: membership, the ownership view,
// the exchange (server and senders), the durable outbox and inbox, and
// termination detection. Create it with Start; end it with Close.
type Node struct {
	cfg         Config
	log         *slog.Logger
	host        Host
	incarnation uint64

	members *membership
	server  *http.Server
	ln      net.Listener
	client  *Client
	outbox  *Outbox
	inbox   *Inbox
	batch   *batcher
	guard   *Guard       // zombie guard (zombie.go)
	last    lastStatuses // members' last figures (forget.go)
	tried   triedBatches // outbox batches sent at least once (death.go)
	left    leftSeen     // agents that left the view, last seen alive (leftdest.go)

	view     atomic.Pointer[View]
	vc       viewChange    // view changes (viewchange.go)
	cc       liveConfig    // cluster-wide settings changes (config.go)
	ho       handoffs      // hand-offs (handoff.go)
	viewed   chan struct{} // closed when the view is known
	ready    chan struct{} // closed when the view's members are all here
	fatal    chan error    // refused at join
	finished chan struct{}
	finOnce  sync.Once
	stopOnce sync.Once

	lastJoinAsk time.Time   // join.go (viewLoop's goroutine)
	leaving     atomic.Bool // join.go: Leaving

	agreedMu sync.Mutex
	agreed   map[string]bool   // peers whose settings agree
	refused  map[string]string // peers refused, with the difference

	receiving atomic.Bool // batches are appended (false while stopping)
	dedup     *idSet      // ids in the inbox or applied
	applyMu   sync.Mutex  // held while a batch is applied (checkpoints take it)
	applied   *idSet      // ids applied
	appliedAt atomic.Int64
	activity  atomic.Uint64 // batches created or applied by this process

	counts  counters
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
	reroutedBatches             atomic.Uint64 // batches for agents not in the view, re-routed (death.go)
	reroutedURLs                atomic.Uint64
	viewLagHeld, viewLagApplied atomic.Uint64 // batches of ready URLs held for their view, applied without it (viewlag.go)
}

// ErrFinished is returned by Start when the crawl is already over.
var ErrFinished = errors.New("cluster: the crawl is finished (state/FINISHED)")

func (c *Config) setDefaults() {
	if c.ExchangePort == 0 {
		c.ExchangePort = int(c.Bind.Port()) + 1
	}
	if c.Wait < 1 {
		c.Wait = 1
	}
	if c.BatchURLs <= 0 {
		c.BatchURLs = 4096
	}
	if c.BatchDelay <= 0 {
		c.BatchDelay = 200 * time.Millisecond
	}
	if c.Window <= 0 {
		c.Window = 8
	}
	if c.CrawlName == "" {
		c.CrawlName = "petrel"
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Grace <= 0 {
		c.Grace = GraceBound(c.Timing, c.Wait, 30*time.Second, 30*time.Second)
	}
}

// ExchangeAddr returns the exchange's address.
func (c *Config) ExchangeAddr() string {
	return netip.AddrPortFrom(c.Bind.Addr(), uint16(c.ExchangePort)).String()
}

// Start opens the node's state, listens on the membership and exchange
// addresses, joins the crawl and starts forming (or loading) the view. It
// returns ErrFinished for a crawl that is over.
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
		viewed: make(chan struct{}), ready: make(chan struct{}), fatal: make(chan error, 1),
		finished: make(chan struct{}), agreed: map[string]bool{}, refused: map[string]string{},
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
	n.leaving.Store(n.ho.st.Leaving) // join.go: a leave to resume
	if hh, ok := host.(HoldHost); ok {
		hh.ResumeHolds(n.pendingHolds()) // before any release can arrive
	}
	if n.client, err = NewClient(cfg.Key); err != nil {
		return nil, err
	}
	n.client.absent = n.absentReply // declared.go
	n.batch = newBatcher(n)
	if err := n.listen(); err != nil {
		return nil, err
	}
	n.receiving.Store(true)
	meta := Meta{Exchange: cfg.ExchangeAddr(), Weight: cfg.Weight, Incarnation: inc, ConfigEpoch: n.ConfigEpoch()}
	if v, err := loadView(filepath.Join(cfg.Dir, "view.json")); err != nil {
		return nil, err
	} else if v != nil {
		n.setView(v)
		n.vc.restored.Store(v) // vieworphan.go
		meta.ViewEpoch = v.Epoch
	}
	if err := n.loadHistory(); err != nil { // viewhistory.go
		return nil, err
	}
	n.guard = n.newGuard()
	if n.members, err = startMembership(cfg.Name, cfg.Bind, "petrel/"+cfg.CrawlName, cfg.Key, cfg.Timing, meta, n.log); err != nil {
		return nil, err
	}
	round := n.guard.Round
	n.members.onRound.Store(&round)
	n.goLoop(n.applyLoop)
	n.goLoop(n.senderLoop)
	n.goLoop(n.batch.loop)
	n.goLoop(n.viewLoop)
	n.goLoop(n.everyProbe(n.viewCatchUp))
	n.goLoop(n.everyProbe(n.configCatchUp))
	n.goLoop(n.everyProbe(n.watchRound))
	n.goLoop(n.terminationLoop)
	n.goLoop(n.zombieLoop)
	n.goLoop(n.deathLoop)
	ok = true
	return n, nil
}

func (n *Node) goLoop(f func(context.Context)) {
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		f(n.ctx)
	}()
}

// listen starts the exchange's HTTP/2 server.
func (n *Node) listen() error {
	tc, err := serverTLS(n.cfg.Key)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", n.cfg.ExchangeAddr())
	if err != nil {
		return fmt.Errorf("cluster: exchange on %s: %w", n.cfg.ExchangeAddr(), err)
	}
	n.ln = ln
	n.server = &http.Server{
		Handler:           n.handler(),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          log.New(slogWriter{l: n.log}, "", 0),
		Protocols:         new(http.Protocols),
	}
	n.server.Protocols.SetHTTP2(true)
	tl := tls.NewListener(ln, tc)
	go n.server.Serve(tl)
	return nil
}

func bumpIncarnation(path string) (uint64, error) {
	var inc uint64
	if b, err := os.ReadFile(path); err == nil {
		inc, _ = strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	}
	inc++
	if err := writeDurable(path, []byte(strconv.FormatUint(inc, 10)+"\n")); err != nil {
		return 0, fmt.Errorf("cluster: incarnation: %w", err)
	}
	return inc, nil
}

// Name returns the agent's name.
func (n *Node) Name() string { return n.cfg.Name }

// View returns the current view (nil before it is known).
func (n *Node) View() *View { return n.view.Load() }

// OutboxLen returns the batches and bytes the durable outbox holds for
// every destination (sent, not yet acknowledged).
func (n *Node) OutboxLen() (batches int, bytes int64) { return n.outbox.Len() }

func (n *Node) viewEpoch() uint64 {
	if v := n.view.Load(); v != nil {
		return v.Epoch
	}
	return 0
}

func (n *Node) setView(v *View) {
	n.view.Store(v)
	select {
	case <-n.viewed:
	default:
		close(n.viewed)
	}
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

func (n *Node) isReady() bool {
	select {
	case <-n.ready:
		return true
	default:
		return false
	}
}

// Finished is closed when the crawl is over.
func (n *Node) Finished() <-chan struct{} { return n.finished }

// Closed is closed when Close begins.
func (n *Node) Closed() <-chan struct{} { return n.ctx.Done() }

// Route sends a record to dest (an agent of the view, not this one) in a
// batch of kind. It may wait while dest's outbox is full.
func (n *Node) Route(dest string, kind Kind, rec []byte) error {
	return n.batch.add(context.Background(), dest, kind, rec)
}

// RouteAll sends recs, in order, to dest in batches of kind, as Route
// does one by one but with one lock and buffer lookup for all of them.
// On an error, some of recs may have been routed.
func (n *Node) RouteAll(dest string, kind Kind, recs [][]byte) error {
	return n.batch.addAll(context.Background(), dest, kind, recs)
}

// Flush writes every buffered record to the outbox now (before a
// checkpoint, so that what the checkpoint counts as parsed is durable).
func (n *Node) Flush() error { return n.batch.flushOld(context.Background(), true) }

func (n *Node) aliveMembers() []Member {
	var out []Member
	for _, m := range n.members.members() {
		if m.State == "alive" {
			out = append(out, m)
		}
	}
	return out
}

func (n *Node) exchangeOf(name string) string {
	for _, m := range n.members.members() {
		if m.Name == name && m.State == "alive" {
			return m.Meta.Exchange
		}
	}
	return ""
}

func (n *Node) agree(name string) {
	n.agreedMu.Lock()
	n.agreed[name] = true
	delete(n.refused, name)
	n.agreedMu.Unlock()
}

func (n *Node) refuse(name, diff string) {
	n.agreedMu.Lock()
	if _, ok := n.refused[name]; !ok {
		n.log.Error("cluster: agent refused: its cluster-wide settings differ", "agent", name, "diff", diff)
	}
	n.refused[name] = diff
	delete(n.agreed, name)
	n.agreedMu.Unlock()
}

func (n *Node) isAgreed(name string) bool {
	n.agreedMu.Lock()
	defer n.agreedMu.Unlock()
	return n.agreed[name]
}

func (n *Node) fail(err error) {
	select {
	case n.fatal <- err:
	default:
	}
}

// viewLoop compares settings with every member and forms the view: the
// first view (epoch 1) is the agreeing members once there are Wait of
// them; a view already formed is loaded from disk or fetched from a peer.
func (n *Node) viewLoop(ctx context.Context) {
	t := time.NewTicker(max(n.cfg.Timing.probe()/2, 20*time.Millisecond))
	defer t.Stop()
	var j joiner
	for {
		// Until some member answers, join again: agents started together
		// come up in any order. An agent that answers and refuses this one
		// (another key or crawl name) ends it (joinrefused.go).
		if err := n.joinStep(ctx, &j); err != nil {
			n.fail(err)
			return
		}
		if n.helloAll(ctx) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-n.members.events:
		}
	}
}

// helloAll runs one round of viewLoop; it reports whether the node is ready.
func (n *Node) helloAll(ctx context.Context) bool {
	alive := n.aliveMembers()
	names := []string{n.cfg.Name}
	for _, m := range alive {
		if m.Name == n.cfg.Name || m.Meta.Exchange == "" {
			continue
		}
		if !n.isAgreed(m.Name) {
			rep, err := n.helloMember(ctx, m) // confighello.go: catches up a missed config epoch
			if err != nil {
				var se *StatusError
				if errors.As(err, &se) && se.Code == http.StatusConflict && rep != nil {
					n.refuse(m.Name, rep.Diff)
					if rep.ViewEpoch > 0 {
						n.fail(fmt.Errorf("cluster: refused by the crawl (agent %s): %s", m.Name, rep.Diff))
						return true
					}
				} else if errors.Is(err, errWrongKey) {
					n.log.Warn("cluster: member's exchange does not hold our key", "agent", m.Name)
				}
				continue
			}
			n.agree(m.Name)
		}
		names = append(names, m.Name)
	}
	v := n.View()
	if v == nil {
		for _, m := range alive {
			if m.Meta.ViewEpoch > 0 && n.isAgreed(m.Name) {
				pv, err := n.fetchView(ctx, m.Meta.Exchange)
				if err != nil {
					continue
				}
				if !pv.Has(n.cfg.Name) {
					n.askJoin(ctx, pv) // join.go: the view that adds us comes by commit
					return false
				}
				v = pv
				break
			}
		}
	}
	if v == nil && len(names) >= n.cfg.Wait && !slices.ContainsFunc(alive, func(m Member) bool { return m.Meta.ViewEpoch > 0 }) {
		// (A member announcing a view means the crawl has one: join it.)
		var as []ViewAgent
		for _, name := range names {
			w := n.cfg.Weight
			for _, m := range alive {
				if m.Name == name {
					w = m.Meta.Weight
				}
			}
			as = append(as, ViewAgent{Name: name, Weight: w})
		}
		nv, err := NewView(1, as)
		if err != nil {
			n.fail(err)
			return true
		}
		v = nv
		n.log.Info("cluster: view formed", "view", v.String())
	}
	if v == nil {
		return false
	}
	if n.View() == nil {
		if err := saveView(filepath.Join(n.cfg.Dir, "view.json"), v); err != nil {
			n.fail(err)
			return true
		}
		n.setView(v)
		n.members.setMeta(func(m *Meta) { m.ViewEpoch = v.Epoch })
	}
	if !v.Has(n.cfg.Name) && !slices.Contains(v.Absent, n.cfg.Name) && !n.leaving.Load() {
		n.rejoin(ctx, v, alive) // join.go: it left the crawl and was started again (absent ones are brought back: death.go)
		return false
	}
	for _, name := range v.Names() {
		if !slices.Contains(names, name) {
			return false // a member of the view is not back yet
		}
	}
	select {
	case <-n.ready:
	default:
		n.log.Info("cluster: ready", "view", v.String())
		close(n.ready)
	}
	return true
}

func (n *Node) hello(ctx context.Context, addr string) (*HelloReply, error) {
	body, _ := json.Marshal(Hello{Name: n.cfg.Name, Settings: n.helloSettings()})
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	out, err := n.client.post(ctx, addr, "/v1/hello", body)
	var rep HelloReply
	if out != nil && json.Unmarshal(out, &rep) == nil {
		return &rep, err
	}
	return nil, err
}

func (n *Node) fetchView(ctx context.Context, addr string) (*View, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	b, err := n.client.do(ctx, http.MethodGet, addr, "/v1/view", nil)
	if err != nil {
		return nil, err
	}
	v := new(View)
	return v, json.Unmarshal(b, v)
}

func saveView(path string, v *View) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return writeDurable(path, append(b, '\n'))
}

func loadView(path string) (*View, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cluster: view: %w", err)
	}
	v := new(View)
	if err := json.Unmarshal(b, v); err != nil {
		return nil, fmt.Errorf("cluster: view %s: %w", path, err)
	}
	return v, nil
}

// watchRound follows the others' metadata: a finished crawl or a
// whole-crawl stop announced by gossip reaches every agent even if the
// exchange call that announced it did not.
func (n *Node) watchRound(context.Context) {
	v := n.View()
	for _, m := range n.aliveMembers() {
		// Only a member of this agent's view ends its crawl: an agent
		// refused or still joining does not inherit another's end.
		if m.Meta.Finished && n.isReady() && v != nil && v.Has(m.Name) {
			n.finish("gossip from " + m.Name)
		}
		if m.Meta.Stopping {
			n.requestStop("whole-crawl stop (gossip from " + m.Name + ")")
		}
	}
}

func (n *Node) requestStop(reason string) {
	n.stopOnce.Do(func() {
		n.log.Info("cluster: stop", "reason", reason)
		n.host.Stop(reason)
		n.members.setMeta(func(m *Meta) { m.Stopping = true })
	})
}

// finish records that the crawl is over: state/FINISHED, gossip, and
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
		n.members.setMeta(func(m *Meta) { m.Finished = true })
	})
}

// StopReceiving makes the exchange refuse new batches (503: the senders
// keep them) and waits until every batch already in the inbox is applied.
// Call it when the agent stops, before its frontier closes.
func (n *Node) StopReceiving(ctx context.Context) error {
	n.receiving.Store(false)
	for {
		if n.appliedAt.Load() >= n.inbox.Durable() {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// Close writes the buffered records to the outbox, tries for up to
// timeout to deliver the outbox, leaves the gossip and closes everything.
// Undelivered batches stay in the outbox for the next start.
func (n *Node) Close(timeout time.Duration) error {
	n.receiving.Store(false)
	n.batch.closing.Store(true)
	err := n.Flush()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if b, _ := n.outbox.Len(); b == 0 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if b, bytes := n.outbox.Len(); b > 0 {
		n.log.Info("cluster: batches kept in the outbox for the next start", "batches", b, "bytes", bytes)
	}
	if serr := n.saveApplied(); err == nil {
		err = serr
	}
	if n.members != nil {
		select {
		case <-n.finished:
			// After the end every agent exits: nobody waits for this one's
			// leave, and a broadcast to agents already gone only times out.
		default:
			n.members.leave(max(timeout/4, 100*time.Millisecond))
		}
	}
	return errors.Join(err, n.closeParts())
}

func (n *Node) closeParts() error {
	n.cancel()
	if n.server != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		n.server.Shutdown(ctx)
		cancel()
	}
	n.wg.Wait()
	var errs []error
	if n.members != nil && n.members.ml != nil {
		n.members.ml.Shutdown()
	}
	if n.inbox != nil {
		errs = append(errs, n.inbox.Close())
	}
	if n.outbox != nil {
		errs = append(errs, n.outbox.Close())
	}
	if n.client != nil {
		n.client.Close()
	}
	return errors.Join(errs...)
}
