package cluster

import (
	"fmt"
	"time"
)

// The grace period G is how long the others wait, after memberlist
// declared an agent dead, before they take over its keys in a new view.
// It must cover what the dead agent may still be doing: memberlist may
// declare an agent dead that is only cut off (a partition, a process
// stopped with SIGSTOP), and such an agent stops starting requests once it
// has completed no gossip round for G/2 (Guard) and cuts those in flight;
// a request it began just before is over within the fetch timeout, and the
// new owner must still wait the longest delay the key or its address may
// owe (host delay, IP delay, Crawl-delay, Retry-After, adaptive).

// suspicionMaxMult is memberlist's SuspicionMaxTimeoutMult (LAN
// default): a suspect with no confirmation from other members stays
// suspect up to this multiple of the shortest suspicion timeout.
const suspicionMaxMult = 6

// MaxSuspicion is the longest time memberlist may take, for a crawl of n
// agents, from an agent's silence to declaring it dead: a probe interval
// and its timeout, then the longest suspicion.
func (t Timing) MaxSuspicion(n int) time.Duration {
	p := t.probe()
	return p + p/2 + suspicionMaxMult*t.SuspicionTimeout(n)
}

// GraceBound returns the smallest safe grace period for a crawl of n
// agents whose requests time out after fetchTimeout and whose largest
// delay (of a key or an address) is maxDelay.
func GraceBound(t Timing, n int, fetchTimeout, maxDelay time.Duration) time.Duration {
	return t.MaxSuspicion(n) + fetchTimeout + maxDelay
}

// ResolveGrace returns the grace period to use: the bound when given is
// 0, given otherwise; an error names the bound when given is below it.
func ResolveGrace(given time.Duration, t Timing, n int, fetchTimeout, maxDelay time.Duration) (time.Duration, error) {
	b := GraceBound(t, n, fetchTimeout, maxDelay)
	if given == 0 {
		return b, nil
	}
	if given < b {
		return 0, fmt.Errorf("--cluster-grace %s is below the smallest safe grace period %s (longest suspicion %s + fetch timeout %s + largest delay %s)",
			given, b, t.MaxSuspicion(n), fetchTimeout, maxDelay)
	}
	return given, nil
}
