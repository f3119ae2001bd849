package cluster

import (
	"strings"
	"time"

	"github.com/hashicorp/memberlist"
)

// heardFrom is when this agent last heard from each member, and which it
// suspects, for petrel cluster status; termination detection also waits
// while it suspects a member (anySuspect). Every other decision goes by
// the states of memberlist's events (member.go). Heard
// is: a probe of it answered, an alive message about it (its own, maybe
// relayed) or one of its join and update events, a batch from it, an
// answer to a batch sent to it.
//
// memberlist keeps a suspicion to itself: a member is listed suspect from
// memberlist's log line on suspecting it (a probe this agent made got no
// answer, direct or indirect) until an alive message about it (its
// refutation) or an event. A suspicion this agent only learns by another
// member's gossip is not seen: the member is listed alive until declared
// dead. Guarded by membership.mu.
type heardFrom struct {
	at       map[string]time.Time
	suspects map[string]bool
}

// suspectLine returns the member named in memberlist's log line on
// suspecting it ("[INFO] memberlist: Suspect NAME has failed, no acks
// received").
func suspectLine(s string) (string, bool) {
	_, rest, ok := strings.Cut(s, "memberlist: Suspect ")
	if !ok {
		return "", false
	}
	name, _, ok := strings.Cut(rest, " has failed, no acks received")
	return name, ok && name != ""
}

// suspected lists an alive member as suspect.
func (m *membership) suspected(name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if mb, ok := m.known[name]; ok && mb.State == "alive" {
		m.suspects[name] = true
	}
}

// anySuspect reports whether this agent suspects a member now.
func (m *membership) anySuspect() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for name := range m.suspects {
		if mb, ok := m.known[name]; ok && mb.State == "alive" {
			return true
		}
	}
	return false
}

// heard notes that this agent heard from the member now. It is safe on a
// nil membership.
func (m *membership) heard(name string) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.known[name]; ok {
		m.at[name] = time.Now().UTC()
	}
}

// noteEvent is record's part: an event ends a suspicion, and an alive one
// is news from the member. Called with m.mu held.
func (m *membership) noteEvent(name, state string) {
	delete(m.suspects, name)
	if state == "alive" {
		m.at[name] = time.Now().UTC()
	}
}

// NotifyAlive is memberlist's AliveDelegate: called for every alive
// message about a member, which refutes a suspicion of it.
func (m *membership) NotifyAlive(peer *memberlist.Node) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.known[peer.Name]; ok {
		m.at[peer.Name] = time.Now().UTC()
		delete(m.suspects, peer.Name)
	}
	return nil
}

// statusMembers is members with the suspicions and the times heard, for a
// Status taken at now: self is heard at now, and none later.
func (m *membership) statusMembers(self string, now time.Time) []Member {
	out := m.members()
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := range out {
		mb := &out[i]
		mb.LastHeard = m.at[mb.Name]
		if mb.Name == self || mb.LastHeard.After(now) {
			mb.LastHeard = now
		} else if mb.State == "alive" && m.suspects[mb.Name] {
			mb.State = "suspect"
		}
	}
	return out
}
