// Package coord is the crawl's coordination on etcd: who is alive, the
// ownership view, the cluster-wide settings, the whole-crawl stop and
// the end of the crawl. No URL goes through it; the exchange of URLs
// (package cluster) keys its batches and hand-offs by the view's
// revision.
//
// etcd runs embedded in the agents named as coordinators (1, 3 or 5:
// StartMember), or as an external cluster; both are reached by the same
// client (Dial) over mutual TLS under the crawl's own certificate
// authority, derived from the crawl key (pki.go): an agent without the
// key can read nothing, write nothing, and is told so at once
// (ErrWrongKey).
//
// An embedded member's client and peer ports hold at most MaxClientConns
// and MaxPeerConns connections open; past a cap a new one is closed at
// once, counted (Member.ConnsRefused) and logged at most once a second
// (package netcap), so that whoever reaches the ports cannot take the
// agent's descriptors. etcd's embed package makes its listeners itself
// and takes none from its caller, so etcd listens on loopback ports of
// its choosing and a front (front.go) on each advertised address,
// capped, forwards the bytes of each connection it accepts to it.
//
// Invariants:
//
//   - An agent is alive while its lease is (agents/NAME is put under it).
//     It starts a request only while its lease is live by its own clock:
//     the send time of its last acknowledged keep-alive plus the TTL
//     minus a margin (Lease.Live, Lease.Context). etcd cannot expire the
//     lease before that time, so an agent cut off from the coordinators
//     stops before anyone else may take its keys.
//   - One agent at a time writes views: the winner of an election
//     (Lead), each write a transaction conditioned on its leadership.
//     Every agent acts only on views it read back (Follow); a view's
//     epoch is the revision of its write, so all agents agree on it.
//   - A member leaves the view when it asks (a leave) or once its key has
//     been gone for Policy.DeathDelay by the writer's clock (a death);
//     a new writer counts from its own election, never earlier. A member
//     gone by death is Absent until it returns or is forgotten, and the
//     crawl does not end while one is.
//   - The end is written only after two waves (probe) answered by every
//     live agent, each finding all idle (an agent with a batch in its
//     outbox or unapplied in its inbox is not) with the same figures;
//     and only if no agent key and not the view changed since the second
//     wave was read.
//
// Files:
//
//	doc.go     this map, the package's role and invariants
//	pki.go     Authority: the crawl's CA from the key; leaf certificates; PEM files
//	member.go  Coordinator, ParseCoordinators, AgentCoordinator; StartMember: an embedded etcd member
//	front.go   front: a member's address, capped, forwarding to etcd on loopback; MaxClientConns, MaxPeerConns
//	client.go  Dial: the client, a wrong key told apart from coordinators not up
//	records.go the key layout; Identity, Settings, AgentRecord, Figures, ViewRecord
//	crawl.go   Crawl: admission, registration, publication, stop, forget, settings
//	lease.go   Lease: kept alive by its own loop; its fence (Live, Context, WaitLive)
//	follow.go  Crawl.Follow: the crawl's keys as a stream of States
//	decide.go  writer: the next view and the end's waves, without I/O
//	lead.go    Crawl.Lead: election, and writing what writer decides
package coord
