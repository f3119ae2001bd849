package cluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"time"
)

// Refused at join. An agent given --join contacts those addresses until
// some member answers (agents started together come up in any order, and
// a stopped crawl's agents come back one by one). Two failures differ:
//
//   - nobody answers: the connection is refused (no agent started there
//     yet) or times out (an agent stopped, or starting): it tries again,
//     for ever, as before;
//   - an agent answers and refuses it: memberlist took the connection,
//     then could not read this agent's encrypted, labelled state (another
//     key or another crawl name), so it closed the connection or answered
//     with what this agent cannot decrypt. That persisting over
//     joinRefusals rounds of joins, none accepted, is fatal: the agent
//     never gets a view, so it would fetch nothing and wait for ever.
//
// The message names the address and the likely cause, found by a TLS
// handshake with the exchange at that address's next port (where an agent
// started without --exchange-port has it): the handshake fails on the
// certificate when the key differs, and succeeds when only the crawl's
// name (the gossip label) does.

// joinRefusals is how many consecutive rounds of joins (viewLoop's, ten
// probe intervals apart) must all be refused before the agent gives up.
// More than one, so that a peer exiting as it is dialled (its kernel
// resets the connection) is not taken for a refusal.
const joinRefusals = 3

// joinRound is the outcome of one round of joins.
type joinRound struct {
	joined  bool   // some address answered and took this agent
	refused string // an address whose agent answered and refused it ("" if none)
	err     error  // every address's failure
}

// join contacts each membership address in addrs.
func (m *membership) join(addrs []string) joinRound {
	var r joinRound
	for _, a := range addrs {
		_, err := m.ml.Join([]string{a})
		if err == nil {
			r.joined = true
			continue
		}
		r.err = errors.Join(r.err, err)
		if r.refused == "" && answeredAndRefused(err) {
			r.refused = a
		}
	}
	return r
}

// refusalMarks are the words of memberlist's join errors (it keeps only
// their text) that come after the peer took the connection: it closed
// it, reset it, or answered with what this agent cannot read. A
// connection refused and an unreachable address have none. A timeout on
// either side is no refusal: a peer too slow to read this agent's state
// in time answers with its own timeout ("remote error: … i/o timeout").
var refusalMarks = []string{"EOF", "connection reset", "broken pipe", "decrypt", "encrypt", "remote error", "msgType", "label"}

func answeredAndRefused(err error) bool {
	s := err.Error()
	if strings.Contains(s, "timeout") || strings.Contains(s, "deadline exceeded") {
		return false
	}
	for _, w := range refusalMarks {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

// joiner is viewLoop's state for joining.
type joiner struct {
	last    time.Time // the last round
	refused int       // consecutive rounds refused, none accepted
	warned  bool
}

// joinStep runs a round of joins when one is due (the agent is alone and
// ten probe intervals have passed); it returns the error that ends the
// agent once the crawl has refused it joinRefusals times in a row.
func (n *Node) joinStep(ctx context.Context, j *joiner) error {
	if len(n.cfg.Join) == 0 || len(n.aliveMembers()) > 1 {
		j.refused = 0
		return nil
	}
	if time.Since(j.last) < 10*n.cfg.Timing.probe() {
		return nil
	}
	j.last = time.Now()
	r := n.members.join(n.cfg.Join)
	switch {
	case r.joined:
		j.refused = 0
	case r.refused != "":
		j.refused++
		n.log.Warn("cluster: join refused", "by", r.refused, "err", r.err)
		if j.refused >= joinRefusals {
			return fmt.Errorf("cluster: join refused by the agent at %s: %s", r.refused, n.refusalCause(ctx, r.refused))
		}
	default:
		j.refused = 0
		if !j.warned && time.Since(n.started) > 30*n.cfg.Timing.probe() {
			j.warned = true
			n.log.Warn("cluster: no member answered at the --join addresses yet; trying again", "err", r.err)
		}
	}
	return nil
}

// refusalCause says why the agent at membership address addr refused this
// one, from a TLS handshake with the exchange on addr's next port.
func (n *Node) refusalCause(ctx context.Context, addr string) string {
	const unsure = "a wrong --cluster-key-file or --cluster-name?"
	ap, err := netip.ParseAddrPort(addr)
	if err != nil || ap.Port() == 65535 {
		return unsure
	}
	tc, err := clientTLS(n.cfg.Key)
	if err != nil {
		return unsure
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	d := tls.Dialer{NetDialer: &net.Dialer{}, Config: tc}
	c, err := d.DialContext(ctx, "tcp", netip.AddrPortFrom(ap.Addr(), ap.Port()+1).String())
	switch {
	case err == nil:
		c.Close()
		return fmt.Sprintf("it holds this crawl's key, so its --cluster-name differs from this agent's %q", n.cfg.CrawlName)
	case errors.Is(err, errWrongKey):
		return "it does not hold this agent's cluster key (a wrong --cluster-key-file?)"
	default:
		return unsure
	}
}
