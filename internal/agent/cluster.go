package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/petrel-crawler/petrel/internal/atomicfile"
	"github.com/petrel-crawler/petrel/internal/cluster"
	"github.com/petrel-crawler/petrel/internal/frontier"
	"github.com/petrel-crawler/petrel/internal/metrics"
	"github.com/petrel-crawler/petrel/internal/stats"
	"github.com/petrel-crawler/petrel/internal/urlx"
)

// ErrFinished is returned by Open for an agent of a crawl that is over.
var ErrFinished = cluster.ErrFinished

// clusterSettings lists the settings every agent of a crawl must share
// (the table's cluster-wide column), in the table's order, for the
// comparison at join; with the seeds (as a digest: each agent reads its own
// file) that the scope derives from. Of the User-Agent only the product
// token must agree: robots.txt groups are chosen by it.
func clusterSettings(cfg Config, seeds []urlx.URL) [][2]string {
	var out [][2]string
	for _, s := range cfg.Table() {
		// Live values come from the crawl's settings key, whatever the
		// flags of a later start say: only the fixed ones must agree.
		if !s.Cluster || s.Live {
			continue
		}
		v := s.String()
		if s.Name == "user-agent" {
			v, _, _ = strings.Cut(v, "/")
		}
		out = append(out, [2]string{s.Name, v})
	}
	sorted := make([]string, len(seeds))
	for i, s := range seeds {
		sorted[i] = s.String()
	}
	slices.Sort(sorted)
	sorted = slices.Compact(sorted)
	sum := sha256.Sum256([]byte(strings.Join(sorted, "\n")))
	out = append(out,
		[2]string{"seeds", fmt.Sprintf("%d URLs, sha256 %s", len(sorted), hex.EncodeToString(sum[:8]))},
		[2]string{"meta-version", strconv.Itoa(int(frontier.MetaVersion))})
	return out
}

// clusterRouter is the frontier's Router in a crawl of several agents:
// URLs go to the owner of their politeness key's group, and URLs the
// owner's sieve finds new go to the owner of their host's address.
type clusterRouter struct {
	a      *Agent
	node   atomic.Pointer[cluster.Node]
	assign frontier.Assign
	host   frontier.Assign // the host policy: its Group of a URL is the host
	stats  *stats.Crawl
	early  earlyRoutes // before the node starts (clusterearly.go)
	placed *cluster.Placements
}

func (r *clusterRouter) view() *cluster.View {
	if n := r.node.Load(); n != nil {
		return n.View()
	}
	return r.early.saved
}

func (r *clusterRouter) self() string { return r.a.cfg.Cluster.Agent }

func (r *clusterRouter) peer(owner string) frontier.Peer {
	if owner == "" || owner == r.self() {
		return frontier.Self
	}
	return frontier.Peer(owner)
}

// OwnerOf returns the owner of url's politeness key's group.
func (r *clusterRouter) OwnerOf(url []byte) frontier.Peer {
	v := r.view()
	if v == nil {
		return frontier.Self
	}
	var buf [128]byte
	p := r.peer(v.OwnerBytes(r.assign.AppendGroup(buf[:0], url)))
	if p == frontier.Self {
		// A key moved here goes to the sieve only once its old owner's
		// seen set is in it (handoff.go).
		r.node.Load().WaitReleases(context.Background())
	}
	return p
}

// Forward sends a URL's record to its owner.
func (r *clusterRouter) Forward(to frontier.Peer, rec []byte) error {
	r.stats.ClusterSent.Add(1)
	return r.route(to, cluster.KindURLs, rec)
}

// ForwardOn sends on a record received for a key this agent no longer
// owns (the sender routed it under an older view): counted apart from the
// URLs this agent routes itself.
func (r *clusterRouter) ForwardOn(to frontier.Peer, rec []byte) error {
	r.stats.ClusterForwarded.Add(1)
	return r.route(to, cluster.KindURLs, rec)
}

var _ frontier.ForwarderOn = (*clusterRouter)(nil)

// AddrOwner returns the owner of addr in the view: URLs reach this
// agent's scheduler when it owns their host's address (ReadyOwner placed
// them), until a view change moves the address (handoff.go).
func (r *clusterRouter) AddrOwner(addr netip.Addr) frontier.Peer {
	v := r.view()
	if v == nil {
		return frontier.Self
	}
	return r.addrPeer(v, addr)
}

// ReadyOwner returns the owner of the address the record's host was first
// placed at (cluster.Placements; the first time, its resolution through
// the resolver's cache), or for a hand-over record the owner of the
// address it carries. A name that does not resolve stays here: the DNS
// stage will count its failure. It is asked for every URL the sieve finds
// new, and allocates nothing for a host placed already (of up to 128
// bytes).
func (r *clusterRouter) ReadyOwner(rec []byte) frontier.Peer {
	v := r.view()
	if v == nil {
		return frontier.Self
	}
	ho, rec, isHO, err := frontier.SplitHandover(rec)
	if err != nil || len(rec) < frontier.MetaLen {
		return frontier.Self // AcceptReady refuses it
	}
	if isHO {
		return r.addrPeer(v, ho.Addr)
	}
	var buf [128]byte // the host, spelt without allocating when placed
	hb := r.host.AppendGroup(buf[:0], rec[frontier.MetaLen:])
	a, ok := r.placed.GetBytes(hb)
	if !ok {
		host := string(hb)
		// The resolver bounds a query by its own timeout (and answers
		// most from its cache): no deadline of our own to make per URL.
		addrs, err := r.a.resolver.Lookup(context.Background(), host)
		if err != nil || len(addrs) == 0 {
			return frontier.Self
		}
		a = r.placed.Keep(host, frontier.PickAddr(addrs))
	}
	return r.addrPeer(v, a)
}

// addrPeer returns the owner of a in v, spelling its group in a buffer of
// its own: it is asked for every URL placed.
func (r *clusterRouter) addrPeer(v *cluster.View, a netip.Addr) frontier.Peer {
	var buf [64]byte
	return r.peer(v.OwnerBytes(a.AppendTo(append(buf[:0], ipGroupPrefix...))))
}

// ipGroup is what decides the owner of an address.
func ipGroup(a netip.Addr) string { return ipGroupPrefix + a.String() }

const ipGroupPrefix = "ip:"

// ForwardReady sends a new URL to the owner of its host's address.
func (r *clusterRouter) ForwardReady(to frontier.Peer, rec []byte) error {
	if moved, err := r.a.forwardRevisit(to, rec); moved || err != nil { // clusterrevisits.go
		return err
	}
	r.stats.ClusterReadySent.Add(1)
	r.a.clusterHost.forwarded(rec) // clusterinterim.go
	// A leaving agent logs what it moves out before sending it (leavemoved.go).
	if taken, err := r.a.clusterHost.logMoved(string(to), rec); taken || err != nil {
		return err
	}
	return r.route(to, cluster.KindReady, rec)
}

// clusterHost is what the cluster node asks of the agent.
type clusterHost struct {
	a       *Agent
	stop    atomic.Pointer[context.CancelFunc]
	stopped atomic.Bool  // a stop was asked (before the run could take it, too)
	ho      handoffState // handoff.go
	interim interimAgain // clusterinterim.go
}

var _ cluster.Host = (*clusterHost)(nil)

func (h *clusterHost) Apply(b *cluster.Batch) error {
	f := h.a.frontier
	restarted := b.Kind == cluster.KindReady && h.restartedSender(b.ID) // clusterinterim.go
	for _, rec := range b.Records {
		var err error
		switch b.Kind {
		case cluster.KindURLs:
			h.a.stats.ClusterReceived.Add(1)
			err = f.Accept(rec)
		case cluster.KindReady:
			h.a.stats.ClusterReadyReceived.Add(1)
			if !h.handedBackKnown(rec) && !h.readyAgain(rec, restarted) { // clusterreturn.go, clusterinterim.go
				err = f.AcceptReady(rec)
			}
		case cluster.KindRevisit:
			err = h.a.adoptRevisit(rec) // clusterrevisits.go
		default:
			err = fmt.Errorf("unknown batch kind %s", b.Kind)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// Idle is never true in a revisit crawl: it runs until stopped.
func (h *clusterHost) Idle() bool {
	return h.a.revisits == nil && h.a.frontier.Idle() && !h.handingOver()
}

func (h *clusterHost) Stop(reason string) {
	h.a.log.Info("stop asked", "reason", reason)
	h.stopped.Store(true)
	if c := h.stop.Load(); c != nil {
		(*c)()
	}
}

// takeStop hands the run's stop to the host, and stops the run at once if
// a stop was asked before.
func (h *clusterHost) takeStop(stop *context.CancelFunc) {
	h.stop.Store(stop)
	if h.stopped.Load() {
		(*stop)()
	}
}

func (h *clusterHost) Progress() cluster.Progress {
	s := h.a.stats
	return cluster.Progress{Fetched: s.Fetched.Load(), Queued: s.Queued.Load() + s.Ready.Load(), Forwarded: s.ClusterForwarded.Load()}
}

// startCluster starts this agent's node (Open, after the frontier exists).
func (a *Agent) startCluster(seeds []urlx.URL, resumed bool) error {
	a.clusterSeeds, a.clusterResumed = seeds, resumed
	c := a.cfg.Cluster
	key, err := cluster.ReadKeyFile(c.KeyFile)
	if err != nil {
		return usageErr("%v", err)
	}
	grace, err := clusterGrace(a.cfg)
	if err != nil {
		return usageErr("%v", err)
	}
	state := filepath.Join(a.cfg.Dir, "state")
	n, err := cluster.Start(cluster.Config{
		Name:         c.Agent,
		Bind:         netip.MustParseAddrPort(c.Bind),
		ExchangePort: c.ExchangePort,
		Key:          key,
		CrawlName:    c.CrawlName,
		Coordinators: c.ParsedCoordinators(),
		Endpoints:    c.Endpoints,
		LeaseTTL:     c.Lease,
		Wait:         c.Wait,
		Dir:          filepath.Join(state, "cluster"),
		FinishedPath: filepath.Join(state, "FINISHED"),
		Settings:     clusterSettings(a.cfg, seeds), // the blocklist is live: in the crawl's settings key
		BatchDelay:   c.BatchDelay,
		Grace:        grace,
		Logger:       a.log.With("part", "cluster"),
	}, a.clusterHost)
	if err != nil {
		if errors.Is(err, cluster.ErrFinished) {
			return err
		}
		return usageErr("%v", err)
	}
	a.node = n
	if err := a.clusterHost.openMovedLog(); err != nil { // leavemoved.go
		return fmt.Errorf("agent: %w", err)
	}
	a.router.node.Store(n)
	a.clusterNode.Store(n)
	if err := a.router.unpark(n); err != nil {
		return err
	}
	n.Follow()  // views reach the host from here on: it holds the node
	go func() { // the frontier's Until follows the crawl's end
		select {
		case <-n.Finished():
			close(a.until)
		case <-n.Context().Done():
		}
	}()
	return nil
}

// waitCluster blocks until the view's members are all here; then the
// seeds are routed like any URL.
func (a *Agent) waitCluster(ctx context.Context) error {
	if a.progress != nil {
		fmt.Fprintf(a.progress, "petrel: agent %s waiting for the crawl's agents (--cluster-wait %d)\n", a.cfg.Cluster.Agent, a.cfg.Cluster.Wait)
	}
	v, err := a.node.WaitReady(ctx)
	if err != nil {
		if ctx.Err() == nil && !errors.Is(err, cluster.ErrFinished) {
			err = usageErr("%v", err) // refused by the crawl: the operator's to fix
		}
		return err
	}
	a.log.Info("cluster ready", "view", v.String())
	a.shareRevisitBudget(v) // clusterrevisits.go
	a.clusterIn.Store(true)
	if a.progress != nil {
		fmt.Fprintf(a.progress, "petrel: agent %s: view %s\n", a.cfg.Cluster.Agent, v)
	}
	a.offerSeeds(a.clusterSeeds, a.clusterResumed)
	a.resumeLeave() // handoff.go
	return nil
}

// closeCluster ends the node after the frontier closed (its last flushes
// may route URLs): buffered records go to the outbox, which gets up to
// --leave-timeout to be delivered and otherwise waits for the next start.
// The placements' file is synced and closed.
func (a *Agent) closeCluster() error {
	var perr error
	if a.router != nil {
		perr = a.router.placed.Close()
	}
	if a.node == nil {
		return perr
	}
	ctx, cancel := context.WithTimeout(context.Background(), a.cfg.Cluster.LeaveTimeout)
	merr := a.clusterHost.closeMovedLog(ctx) // leavemoved.go
	cancel()
	merr = errors.Join(merr, a.forgetMovedRevisits()) // clusterrevisits.go
	err := a.node.Close(a.cfg.Cluster.LeaveTimeout)
	// The hand-offs under way end with the node's context (an unfinished
	// one is resumed at the next start): none uses the node past here.
	a.clusterHost.ho.busy.Wait()
	a.node = nil
	return errors.Join(err, perr, merr, a.clusterHost.closeReceived()) // countslog.go
}

// openPlacements opens the sieve owner's placements of hosts, kept in
// state/cluster across restarts.
func openPlacements(state string, log *slog.Logger) (*cluster.Placements, error) {
	p, dropped, err := cluster.OpenPlacements(filepath.Join(state, "cluster", "placements"), 0)
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	if dropped > 0 {
		log.Warn("cluster: placements file: records cut short or damaged dropped (their hosts are placed by a fresh resolution)", "dropped", dropped)
	}
	if p.Len() > 0 {
		log.Info("cluster: placements of hosts kept from the last run", "hosts", p.Len())
	}
	return p, nil
}

// clusterSummary is the summary's line for the exchange, with the counts
// of fencing by view.
func clusterSummary(s stats.Snapshot, f cluster.Fenced) string {
	return fmt.Sprintf("  cluster            URLs sent %d, received %d, forwarded %d (received for a key no longer owned); new URLs handed to address owners %d, received %d; handed over at view changes: %d keys, %d queued URLs, %d seen-set entries (received %d); of an older view: %d batches refused, %d re-routed, %d hand-off parts and %d releases refused, %d cut again",
		s["ClusterSent"], s["ClusterReceived"], s["ClusterForwarded"], s["ClusterReadySent"], s["ClusterReadyReceived"],
		s["HandedOverKeys"], s["HandedOverURLs"], s["HandedOverSeen"], s["ReceivedSeen"],
		f.RefusedBatches, f.ReroutedBatches, f.RefusedParts, f.RefusedReleases, f.Recut)
}

// warcPrefix names an agent's WARC files after it, so that the union of
// the agents' warc/ directories is the crawl's archive.
func warcPrefix(cfg Config) string {
	if cfg.Cluster.Enabled() {
		return "petrel-" + cfg.Cluster.Agent
	}
	return ""
}

// clusterStateFile holds, in a checkpoint, where the cluster inbox's
// replay starts after a crash.
const clusterStateFile = "cluster-applied.json"

// checkpointCluster ends the cluster's part of a checkpoint begun with the
// applier paused: it saves the inbox position beside the frontier's state
// (err is the frontier's checkpoint error, passed through), resumes the
// applier, and makes the URLs routed by the pages the checkpoint counts as
// done durable in the outbox before the checkpoint is.
func (a *Agent) checkpointCluster(dir string, err error) error {
	var state []byte
	if err == nil {
		state, err = a.node.CheckpointState()
	}
	a.node.ResumeApply()
	if err == nil {
		err = a.node.Flush()
	}
	if err == nil {
		err = a.router.placed.Sync()
	}
	if err == nil {
		err = atomicfile.Write(filepath.Join(dir, clusterStateFile), atomicfile.Options{Sync: true},
			func(w io.Writer) error { _, err := w.Write(state); return err })
	}
	return err
}

// trimInbox drops the inbox segments that the oldest checkpoint kept
// covers (the newest may prove unusable at recovery).
func (a *Agent) trimInbox() {
	if a.node == nil {
		return
	}
	names := listCheckpoints(a.checkpointsDir())
	if len(names) == 0 {
		return
	}
	b, err := os.ReadFile(filepath.Join(a.checkpointsDir(), names[0], clusterStateFile))
	if err != nil {
		return
	}
	if err := a.node.TrimInbox(b); err != nil {
		a.log.Warn("cluster: trim inbox", "err", err)
	}
}

// clusterFigures reads the exchange's figures for the metrics (zero until
// the agent has joined).
func (a *Agent) clusterFigures() (metrics.ClusterFigures, bool) {
	n := a.clusterNode.Load()
	if n == nil {
		return metrics.ClusterFigures{}, true
	}
	var f metrics.ClusterFigures
	if v := n.View(); v != nil {
		f.Members = len(v.Agents)
	}
	f.OutboxBatches, f.OutboxBytes = n.OutboxLen()
	c := n.Fenced()
	f.StaleBatchesRefused, f.StaleBatchesRerouted = int64(c.RefusedBatches), int64(c.ReroutedBatches)
	f.StalePartsRefused, f.StaleReleasesRefused, f.StaleRecut = int64(c.RefusedParts), int64(c.RefusedReleases), int64(c.Recut)
	return f, true
}
