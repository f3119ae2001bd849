// Package cluster makes one crawl run on many agents, as BUbiNG's agents
// do: identical peers, no central server. It holds an agent's part of the
// cluster: membership and failure detection (memberlist, SWIM gossip,
// encrypted with a key derived from the crawl's shared key and labelled
// with the crawl's name), the ownership view (weighted rendezvous hashing
// over an explicit, versioned list of agents), the exchange of URLs
// between agents (HTTP/2 over mutually authenticated TLS whose identity
// is derived from the same key), the durable outbox and inbox under it,
// and distributed termination detection.
//
// One responsibility per file:
//
//	key.go         the crawl key: keygen (mode 0600), HKDF derivations
//	tls.go         the exchange's TLS identity, derived from the key
//	view.go        View: the versioned ownership view
//	hrw.go         View.Owner: weighted rendezvous hashing
//	viewchange.go  new views: ProposeView (prepare, commit), catch-up
//	member.go      memberlist: gossip, node metadata, member states
//	batch.go       Batch and its wire form (S2-compressed records)
//	batcher.go     routed records → batches per destination (count, time)
//	outbox.go      the sender's durable, bounded outbox (put, ack, read)
//	outboxlog.go   its log: format, open, segments, compaction
//	groupcommit.go fsyncs shared by the writers of a log (outbox, inbox)
//	sender.go      delivering the outbox (window, backoff)
//	exchange.go    the exchange's HTTP/2 endpoints and client
//	inbox.go       the receiver's durable log (group commit, trim)
//	idset.go       batch ids seen (watermark per stream)
//	applier.go     inbox → host, in order, replayable after a crash
//	termination.go the end of the crawl, detected by waves
//	grace.go       the grace period G after a death, and its bound
//	guard.go       Guard: no request from an agent that may be cut off
//	zombie.go      the node's guard: when it closes, confirming the view
//	death.go       takeover of a dead agent's keys after G, its return,
//	               re-routing the outbox of agents not in the view
//	forget.go      petrel cluster forget: a view without a dead agent
//	placement.go   Placements: the address a key owner first placed a host at
//	placementlog.go its file, kept across restarts (format beside the code)
//	status.go      Status (petrel cluster status), the slots each agent owns
//	heard.go       when each member was last heard from, which are suspect
//	node.go        Node: the parts together; joining; forming the view
//	joinrefused.go joining by --join; refused by another key or crawl name
//
// Invariants:
//
//   - Ownership is a pure function of (view, group): two agents holding
//     views of one epoch agree on every owner. A view changes only as a
//     whole, under a new epoch, agreed by every alive member of the old
//     view and every member of the new (viewchange.go); memberlist's
//     suspicion never changes it. Epochs only grow on every agent.
//   - A record handed to Route is either in a batch buffer, in the outbox
//     (durable) or acknowledged by its receiver; an acknowledgement is sent
//     only after the batch is fsynced in the receiver's inbox. The outbox
//     and the inbox are never rolled back; a resent batch is recognised
//     by its id (sender, incarnation, sequence) and applied once.
//   - Every store is bounded: a batch (MaxBatchBytes), a batch buffer
//     (BatchURLs), the outbox per destination (OutboxBytes: Route waits),
//     the outbox's log (twice what it holds plus four segments), the
//     inbox (InboxBytes: the exchange answers 503 and senders wait),
//     the batches in flight per destination (Window).
//   - Gossip carries liveness and a small metadata record only; URLs, the
//     view and settings travel over the exchange.
//   - Nothing is decided over before every member of the view is alive
//     and idle, with empty outboxes and applied inboxes, in two
//     consecutive waves with unchanged counters (termination.go), and no
//     agent taken out by a death is still listed absent (death.go).
//   - No agent fetches unless its zombie guard is open: a gossip round
//     within G/2 and its view confirmed by the view's members (zombie.go);
//     the keys of a dead agent are taken over only G after its death, by
//     a view that a strict majority of the old one is alive to agree.
package cluster
