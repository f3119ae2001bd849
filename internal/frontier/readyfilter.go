package frontier

// ReadyFilter is what a ReadyRouter may add to drop a URL its sieve found
// new and that this agent would fetch, because it holds it already: in a
// crawl of several agents, a sieve that took over the keys of an agent
// declared dead starts them with an empty seen set and lets through again
// URLs that the dead agent's sieve had let through, whose first copy this
// agent, owning their address, got from it. HeldAlready is called from the
// sieve's flush, for each such record (Meta then URL), and must be quick.
type ReadyFilter interface {
	HeldAlready(rec []byte) bool
}
