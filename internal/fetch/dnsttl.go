package fetch

import (
	"context"
	"net"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

// ttlNotes holds, by name, the TTL the DNS answers read so far for a
// lookup in flight allow (the least of them). Only a name whose lookup is
// in flight (between start and take) is noted, so it holds at most one
// entry per lookup in flight. Safe for concurrent use.
type ttlNotes struct {
	mu sync.Mutex
	m  map[string]time.Duration // -1: nothing noted yet
}

// start begins noting the answers for name.
func (n *ttlNotes) start(name string) {
	n.mu.Lock()
	if n.m == nil {
		n.m = map[string]time.Duration{}
	}
	n.m[name] = -1
	n.mu.Unlock()
}

// take ends noting for name and returns the least TTL noted, if any.
func (n *ttlNotes) take(name string) (time.Duration, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	d, ok := n.m[name]
	delete(n.m, name)
	return d, ok && d >= 0
}

// note records that an answer for name may be kept for d.
func (n *ttlNotes) note(name string, d time.Duration) {
	n.mu.Lock()
	if cur, ok := n.m[name]; ok && (cur < 0 || d < cur) {
		n.m[name] = d
	}
	n.mu.Unlock()
}

// ttlConn is a UDP connection of the Go resolver to a DNS server that
// notes the TTL of each answer it reads. It stays a net.PacketConn, which
// tells the resolver that a read is one message.
type ttlConn struct {
	*net.UDPConn
	notes *ttlNotes
}

func (c *ttlConn) Read(p []byte) (int, error) {
	n, err := c.UDPConn.Read(p)
	if n > 0 {
		if name, ttl, ok := answerTTL(p[:n]); ok {
			c.notes.note(name, ttl)
		}
	}
	return n, err
}

// noteTTLs wraps dial, the Go resolver's, so that the answers read over
// UDP are noted in notes (those over TCP, after a truncated answer, are
// not).
func noteTTLs(dial func(ctx context.Context, network, address string) (net.Conn, error), notes *ttlNotes) func(ctx context.Context, network, address string) (net.Conn, error) {
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		c, err := dial(ctx, network, address)
		if uc, ok := c.(*net.UDPConn); ok && err == nil {
			return &ttlConn{UDPConn: uc, notes: notes}, nil
		}
		return c, err
	}
}

// answerTTL returns the name asked in the DNS response msg (lower-cased,
// without its final dot) and how long its answer may be kept: the least
// TTL of its answer records, or for an answer without records (no such
// name, or none of that type) the lesser of its SOA record's TTL and
// minimum (RFC 2308). ok is false for a message that is not a response or
// says neither.
func answerTTL(msg []byte) (name string, ttl time.Duration, ok bool) {
	var p dnsmessage.Parser
	h, err := p.Start(msg)
	if err != nil || !h.Response {
		return "", 0, false
	}
	q, err := p.Question()
	if err != nil {
		return "", 0, false
	}
	name = strings.ToLower(strings.TrimSuffix(q.Name.String(), "."))
	if err := p.SkipAllQuestions(); err != nil {
		return "", 0, false
	}
	least := uint32(1<<32 - 1)
	for {
		rh, err := p.AnswerHeader()
		if err == dnsmessage.ErrSectionDone {
			break
		}
		if err != nil || p.SkipAnswer() != nil {
			return "", 0, false
		}
		least, ok = min(least, rh.TTL), true
	}
	for !ok {
		rh, err := p.AuthorityHeader()
		if err == dnsmessage.ErrSectionDone {
			break
		}
		if err != nil {
			return "", 0, false
		}
		if rh.Type != dnsmessage.TypeSOA {
			if p.SkipAuthority() != nil {
				return "", 0, false
			}
			continue
		}
		soa, err := p.SOAResource()
		if err != nil {
			return "", 0, false
		}
		least, ok = min(least, rh.TTL, soa.MinTTL), true
	}
	if !ok {
		return "", 0, false
	}
	return name, time.Duration(least) * time.Second, true
}
