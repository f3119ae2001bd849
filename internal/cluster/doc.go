// Package cluster makes one crawl run on many agents, as BUbiNG's agents
// do: identical peers that fetch alike. It holds an agent's part of the
// cluster: the node's use of the crawl's coordination on etcd (package
// coord: who is alive, the ownership view, the cluster-wide settings,
// the stop and the end), the ownership view itself (weighted rendezvous
// hashing over an explicit, versioned list of agents), the exchange of
// URLs between agents (HTTP/2 over mutually authenticated TLS whose
// identity is derived from the crawl's key), the durable outbox and inbox
// under it, and the hand-off of keys when the view changes.
//
// One responsibility per file:
//
//	doc.go          this map, the package's role and invariants
//	key.go          the crawl key: keygen (mode 0600), HKDF derivations
//	tls.go          the exchange's TLS identity, derived from the key
//	settings.go     the cluster's settings (flags): coordinators, lease, grace
//	node.go         Node: the parts together; start, ready, finish, close
//	coordination.go the node on etcd: member, lease, registration, following the crawl
//	dial.go         DialCrawl, EtcdCerts: commands that reach a crawl's etcd; the certificates
//	view.go         View: the versioned ownership view, its file; Returning, DeclaredDead
//	hrw.go          View.Owner: weighted rendezvous hashing
//	viewinstall.go  installing the views read from etcd, in order
//	guard.go        Guard: no request while the lease is not known live
//	leave.go        a deliberate leave: Leaving, WaitView, LeaveDone
//	death.go        the outbox's batches for agents out of the view (dead, or left):
//	                re-routed, or kept while their agent may hold them; batchSet
//	forget.go       petrel cluster forget: an absent agent dropped for good
//	config.go       cluster-wide settings changed live, through etcd
//	batch.go        Batch and its wire form (S2-compressed records)
//	batcher.go      routed records → batches per destination (count, time)
//	outbox.go       the sender's durable, bounded outbox (put, ack, read)
//	outboxlog.go    its log (frames of package framelog): format, open, segments, compaction
//	loggedready.go  ready batches logged by their sender before the outbox has them
//	sender.go       delivering the outbox (window, backoff); the loop that re-routes its batches
//	transport.go    Transport, Receiver: what carries the exchange, its answers
//	exchange.go     the HTTP/2 mutual-TLS Transport: endpoints and client
//	receive.go      a batch's arrival: duplicate, fence, view lag, inbox
//	fence.go        fencing by view: refusing older batches and hand-off parts, sending them again
//	inbox.go        the receiver's durable log (frames of package framelog, trim)
//	idset.go        batch ids seen (watermark per stream)
//	decoded.go      batches decoded at their arrival, for the applier
//	applier.go      inbox → host, in order, replayable after a crash
//	handoff.go      the hand-off of moved keys: ViewChange, parts, releases
//	handoffparts.go a hand-off's parts: seen sets and counts in bounded pieces
//	handoffstate.go the hand-offs' durable state (awaiting.json)
//	placement.go    Placements: the address a key owner first placed a host at
//	placementlog.go its file, kept across restarts (format beside the code)
//	status.go       Status (petrel cluster status), the slots each agent owns; Traffic, WaitSent
//	why.go          asking another agent what it knows of a URL
//
// Invariants:
//
//   - Ownership is a pure function of (view, group): two agents holding
//     views of one epoch agree on every owner. A view's epoch is the etcd
//     revision of its write; views are written by one elected agent only
//     and every agent installs them in revision order as its watch
//     delivers them (coordination.go). Epochs only grow on every agent.
//   - No agent starts a request unless its guard is open: its lease is
//     live by its own clock (coord.Lease's fence) and it holds a view
//     that has it, read at or after its registration. A dead agent's keys
//     move only once its lease has expired in etcd and --cluster-grace
//     (the longest request and delay it may still owe) has passed.
//   - A record handed to Route is either in a batch buffer, in the outbox
//     (durable) or acknowledged by its receiver; an acknowledgement is sent
//     only after the batch is fsynced in the receiver's inbox. The outbox
//     and the inbox are never rolled back; a resent batch is recognised
//     by its id (sender, incarnation, sequence) and applied once. The
//     incarnation file fails closed: unreadable, the agent stops.
//   - Fencing by view: a receiver refuses a batch routed under a view
//     older than its fence, the newest view it installed in which it gave
//     slots away (at a start, at least the view it saved); counted
//     (stale_view_refused_batches) and logged at most every 10 s. Why
//     that comparison: the sender routed each record of the batch to the
//     receiver under a view no older than the batch's epoch (the view at
//     its first record's routing), in which the receiver owned it; if
//     that epoch is at or after the fence, the receiver has given no slot
//     away since and owns every record still, so taking the batch is what
//     routing it now would do. Older than the fence, some records may
//     have moved: refused. A refusal loses nothing: the batch is not in
//     the receiver's inbox, and its sender keeps it in its outbox until it
//     holds a view at least as new as the fence, then routes its records
//     again under that view, durably, before removing it; its new batches
//     are not older than the fence. A batch received before the fence
//     rose is acknowledged again and applied, as any in the inbox: the
//     host forwards the records it no longer owns (fence.go). Hand-off
//     parts and releases carry the view that moved their slots and the
//     view they were cut under: one cut under a view older than the
//     fence is refused alike (counted, logged) and cut again by its
//     sender under a view at least as new, its seen hashes and counts to
//     their slots' owners in it, its release to its receiver, last; one
//     of a view the receiver has not installed waits (503), and a
//     release ends only the holds and waits of its view or older
//     (handoff.go).
//   - Every store is bounded: a batch (MaxBatchBytes), a batch buffer
//     (BatchURLs), the outbox per destination (OutboxBytes: Route waits),
//     the outbox's log (twice what it holds plus four segments), the
//     inbox (InboxBytes: the exchange answers 503 and senders wait),
//     the batches in flight per destination (Window), the connections
//     the exchange holds open (MaxExchangeConns: one past it is closed at
//     once, counted and logged, netcap; Node.ConnsRefused). The records
//     of a refused batch, or of one for an agent out of the view, are
//     routed again past the outbox's bound, one batch at a time, its
//     removal following.
//   - etcd carries liveness, the view, settings and figures only; URLs
//     travel over the exchange.
//   - The crawl ends only when its view's writer found every live agent
//     idle (nothing queued, in flight, in an outbox or unapplied) in two
//     consecutive waves with the same figures, and no agent absent.
package cluster
