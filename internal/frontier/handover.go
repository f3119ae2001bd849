package frontier

import (
	"encoding/binary"
	"fmt"
	"net/netip"
)

// Hand-over records. In a crawl of several agents one agent at a time
// holds a key (its visit state is attached to a workbench entry there):
// the agent owning the address its host had when the key's sieve owner
// first placed it, until that agent hands the key over. It does so when
// the key's address becomes another agent's — an address change
// (readdress.go) or a view change (handoff.go) — by marking its visit
// state moved and forwarding what it holds, and every record that reaches
// it later, as hand-over records: the record, the address the holder
// resolved, and the key's hand-over generation.
//
// Each visit state counts the hand-overs of its key it knows of (gen).
// Marking a visit state moved adds one; a hand-over record of a higher
// generation than the receiver's visit state makes the receiver the
// holder: it takes the record's address for the host (no resolution of its
// own, so a receiver whose resolver still answers the old address does not
// send the key straight back), attaches the key, or hands it on if that
// address is not its own. A record of a lower or equal generation comes
// from an agent that no longer holds the key: it is an ordinary record
// (queued here if this agent holds the key, forwarded to where it went if
// not). So a host moving back to an address it had goes back to its old
// holder, which takes it, and a record an older holder forwarded late
// never makes two holders.
//
// Format (integers big-endian):
//
//	offset size
//	0      1    HandoverTag
//	1      4    generation
//	5      1    address length n (4 or 16; 0 when the holder has not
//	            resolved the record's host: a key of several hosts),
//	            plus RobotsFlag (0x80) when a robots section follows
//	6      n    the address of the record's host
//	6+n         with RobotsFlag, the robots section (handrobots.go):
//	              uvarint  the rules' remaining life, nanoseconds
//	              uvarint  m, then m bytes: the rules' flat form
//	              (robots.Rules.AppendBinary, as robots.Store keeps it)
//	...         the record (Meta, then URL)
//
// A record without RobotsFlag is the format's first form, read as it was.
// A hand-over record travels where a ready record does (ReadyRouter,
// AcceptReady, the ready queue and its checkpoints). A visit state's
// generation, its address and where it was handed over to are kept across
// a restart apart from its records (handoverkeys.go).

// HandoverTag is the first byte of a hand-over record; a record's first
// byte is otherwise MetaVersion.
const HandoverTag = 0xF1

// RobotsFlag marks, in a hand-over record's address length, that a robots
// section follows the address.
const RobotsFlag = 0x80

// Handover is the hand-over part of a hand-over record.
type Handover struct {
	Gen    uint32        // the key's hand-over generation
	Addr   netip.Addr    // the address the sending holder resolved the record's host to (invalid: none)
	Robots *HandedRobots // the robots.txt rules of the record's authority (nil: none handed)
}

// AppendHandover appends the hand-over record of rec (Meta, then URL) to
// dst and returns the extended slice.
func AppendHandover(dst []byte, ho Handover, rec []byte) []byte {
	dst = append(dst, HandoverTag)
	dst = binary.BigEndian.AppendUint32(dst, ho.Gen)
	a := ho.Addr.Unmap().AsSlice()
	if ho.Robots == nil {
		dst = append(dst, byte(len(a)))
		return append(append(dst, a...), rec...)
	}
	dst = append(dst, byte(len(a))|RobotsFlag)
	dst = ho.Robots.appendTo(append(dst, a...))
	return append(dst, rec...)
}

// SplitHandover returns the hand-over part and the record of a hand-over
// record; ok is false when rec is not one (an ordinary record is returned
// as it is). err reports a hand-over record cut short.
func SplitHandover(rec []byte) (ho Handover, inner []byte, ok bool, err error) {
	if len(rec) == 0 || rec[0] != HandoverTag {
		return Handover{}, rec, false, nil
	}
	if len(rec) < 6 {
		return Handover{}, nil, true, handoverCutShort(rec)
	}
	n := int(rec[5] &^ RobotsFlag)
	if (n != 0 && n != 4 && n != 16) || len(rec) < 6+n {
		return Handover{}, nil, true, handoverCutShort(rec)
	}
	a, _ := netip.AddrFromSlice(rec[6 : 6+n])
	ho = Handover{Gen: binary.BigEndian.Uint32(rec[1:5]), Addr: a}
	inner = rec[6+n:]
	if rec[5]&RobotsFlag != 0 {
		if ho.Robots, inner, err = splitRobots(inner); err != nil {
			return Handover{}, nil, true, err
		}
	}
	return ho, inner, true, nil
}

// handoverCutShort is the error of a hand-over record cut short, made only
// when one is: SplitHandover is asked for every record routed.
func handoverCutShort(rec []byte) error {
	return fmt.Errorf("frontier: hand-over record of %d bytes cut short", len(rec))
}

// ReadyRecord returns the record (Meta, then URL) of a ready or hand-over
// record (nil for a hand-over record cut short).
func ReadyRecord(rec []byte) []byte {
	_, inner, _, _ := SplitHandover(rec)
	return inner
}

// handOn marks v moved to the agent to (its address is that agent's now):
// one more hand-over of its key.
func (s *scheduler) handOn(v *visitState, to Peer) {
	v.setMovedTo(to)
	v.gen++
	s.f.stats.HandedOverKeys.Add(1)
}

// takeHandover applies a hand-over record's part to v, which its record
// (of host h) is for: one of a newer generation than v knows makes this
// agent the key's holder, h at ho.Addr (handed on at once if another agent
// owns its address). Others change nothing.
func (s *scheduler) takeHandover(v *visitState, h *hostState, ho Handover) {
	if ho.Gen <= v.gen {
		return
	}
	v.gen = ho.Gen
	s.adopt(h, ho.Addr)
	if v.movedTo() != "" && v.host.resolved {
		v.setMovedTo("")
		s.attachOrMove(v)
	}
}

// adopt gives h the address a holder handed its key over with: h is
// resolved to it, confirmed now (its next refresh is DNSRefresh away),
// and the visit states waiting for its resolution go on.
func (s *scheduler) adopt(h *hostState, a netip.Addr) {
	if h.dead || !a.IsValid() {
		return
	}
	h.resolvedAt = s.f.now()
	if h.resolved {
		s.setAddr(h, a)
		return
	}
	h.addr, h.resolved = a, true
	s.wake(h.takeWaiters())
}

// handoverAddr is the address a hand-over record of v for url carries: the
// address this agent resolved url's host to, if it has (v's own host's,
// for a key of one host).
func (s *scheduler) handoverAddr(v *visitState, url []byte) netip.Addr {
	name := hostOf(string(schemeAuthorityOf(url)))
	if name == v.host.name {
		return v.host.addr
	}
	if h := s.dns.hosts[name]; h != nil && h.resolved {
		return h.addr
	}
	return netip.Addr{}
}
