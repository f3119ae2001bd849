package frontier

import (
	"net/netip"
	"strconv"

	"github.com/cespare/xxhash/v2"

	"github.com/petrel-crawler/petrel/internal/urlx"
)

// Peer names an agent of a crawl. The zero value, Self, is this agent.
type Peer string

// Self is the Peer of the agent asking.
const Self Peer = ""

// Router is the seam between the frontier and the other agents of a crawl:
// it says which agent owns a URL, and which agent fetches from an address.
//
// The contract:
//
//   - Every URL on its way to the frontier (seeds, links, redirect targets;
//     everything given to Enqueue or EnqueueAll) passes OwnerOf once, after
//     the URL cache has let it through (so that most repeats never leave the
//     agent that found them) and before the per-key budget and the sieve.
//     The owner of a URL is the owner of its politeness key's group
//     (Assign.Group): one key never has two owners. When OwnerOf answers
//     Self, the URL goes on to this agent's budget and sieve; otherwise the
//     frontier hands its record (AppendRecord: Meta, then URL) to Forward
//     and forgets it. The owner gives what it receives to Accept.
//   - OwnerOf and Forward are called from many goroutines at once (the
//     parsers, through Enqueue); AddrOwner from the scheduler goroutine.
//     None of them may call back into the frontier. Forward may block (that
//     is back-pressure on the parsers) but must not lose the record once it
//     returns nil; an error is returned by Enqueue.
//   - The scheduler asks AddrOwner when it attaches a visit state to the
//     workbench entry of its host's address and at a view change
//     (MoveOut, Rehome). The frontier fetches only from addresses this
//     agent owns: a visit state whose address another agent owns is moved
//     (handoff.go) and its URLs go to that agent through the ReadyRouter,
//     which a Router answering other than Self must implement.
//
// A nil Config.Router is Local.
type Router interface {
	// OwnerOf returns the agent that owns url (an absolute URL as
	// urlx.URL.String spells it), by its politeness key's group.
	OwnerOf(url []byte) Peer
	// Forward hands rec, the record of a URL that to owns, to that agent.
	Forward(to Peer, rec []byte) error
	// AddrOwner returns the agent that fetches from addr.
	AddrOwner(addr netip.Addr) Peer
}

// Local is the Router of a crawl of one agent: this agent owns everything.
type Local struct{}

// OwnerOf returns Self.
func (Local) OwnerOf([]byte) Peer { return Self }

// Forward is never called for Local's answers; it returns an error.
func (Local) Forward(to Peer, _ []byte) error {
	return &routeError{to: to}
}

// AddrOwner returns Self.
func (Local) AddrOwner(netip.Addr) Peer { return Self }

type routeError struct{ to Peer }

func (e *routeError) Error() string {
	return "frontier: a single-agent crawl cannot forward a URL to agent " + strconv.Quote(string(e.to))
}

// Key returns the politeness key of url (an absolute URL): the visit state
// the scheduler puts it in. With the ip policy the key depends on DNS and
// Key returns the host's key ("ip-host:" and the host name), which names
// the group, not the visit state.
func (a Assign) Key(url []byte) string {
	sa := schemeAuthorityOf(url)
	if a.kind == assignIP {
		return "ip-host:" + hostOf(string(sa))
	}
	k, _ := a.key(sa, url)
	return k
}

// Group returns what decides the owner of url's politeness key in a crawl
// of several agents: the host for the authority, host, url and ip policies,
// the registered domain for domain, the bucket ("bucket:N") for bucket:N.
// Every URL of one politeness key has the same group.
func (a Assign) Group(url []byte) string {
	return string(a.AppendGroup(nil, url))
}

// AppendGroup appends url's Group to dst and returns the extended slice.
func (a Assign) AppendGroup(dst, url []byte) []byte {
	sa := schemeAuthorityOf(url)
	switch a.kind {
	case assignDomain:
		return append(dst, urlx.RegisteredDomain(hostOf(string(sa)))...)
	case assignBucket:
		dst = append(dst, "bucket:"...)
		return strconv.AppendUint(dst, xxhash.Sum64(sa)%a.buckets, 10)
	}
	return append(dst, hostOf(string(sa))...)
}

// GroupHash returns the xxhash of url's Group: the sieve's Options.GroupHash
// (the top bits of a URL's sieve hash are its group's slot) and what the
// cluster's ownership view decides owners by. It allocates nothing for
// groups of up to 128 bytes.
func (a Assign) GroupHash(url []byte) uint64 {
	var buf [128]byte
	return xxhash.Sum64(a.AppendGroup(buf[:0], url))
}

// Accept takes a record (Meta, then URL: see AppendRecord) that another
// agent's Router forwarded to this agent, its owner: it goes to the per-key
// budget and the sieve, skipping the URL cache (the finder asked its own)
// and the router. Safe for concurrent use.
func (f *Frontier) Accept(rec []byte) error {
	if _, err := DecodeMeta(rec); err != nil {
		return err
	}
	// A record sent under an older view may name a key this agent no
	// longer owns: it goes on to the owner.
	f.routeMu.RLock()
	if to := f.cfg.Router.OwnerOf(rec[MetaLen:]); to != Self {
		f.routeMu.RUnlock()
		if fo, ok := f.cfg.Router.(ForwarderOn); ok {
			return fo.ForwardOn(to, rec)
		}
		return f.cfg.Router.Forward(to, rec)
	}
	defer f.routeMu.RUnlock()
	return f.admitOwned(rec)
}

// ForwarderOn is what a Router adds to tell the records Accept sends on
// (received for a key this agent no longer owns) from those it routes
// itself: Accept calls ForwardOn for them instead of Forward.
type ForwarderOn interface {
	ForwardOn(to Peer, rec []byte) error
}
