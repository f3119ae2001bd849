package frontier

import (
	"encoding/binary"
	"errors"
	"net/netip"
	"slices"
	"strings"
)

// The hand-over state of the keys, kept across a restart. A visit state
// that knows of a hand-over of its key (gen > 0: it was handed over to
// this agent, or by it) is saved with a checkpoint (HandoverCheckpointSink)
// and at a clean stop (Frontier.HandoverKeys) as a HandoverKey, and given
// back to the next run's frontier (Config.Handovers). Restored keys are
// not visit states yet: the first record that reaches the distributor for
// one makes its visit state as it was — its generation, its host at the
// address it held or handed the key over with (no resolution of its own,
// its next refresh DNSRefresh away), and, for a key handed over, the agent
// it went to (its records are forwarded there, or to the address's owner
// in the view of the day). So a restarted holder does not take a stale
// hand-over record for a new one, and a restarted old holder whose
// resolver still answers the old address forwards the key's records
// instead of holding the key beside its new holder.
//
// Restored keys that no record has reached yet are saved again by the
// next checkpoint or stop; at most MaxRestoredHandovers are kept.
//
// A HandoverKey record (integers big-endian, lengths uvarint):
//
//	4    generation
//	1    address length n (4 or 16; 0: the host is not resolved)
//	n    the address
//	     len, key
//	     len, the host whose address decides the key's entry
//	     the agent the key was handed over to (the rest; empty: held here)

// HandoverKey is the saved hand-over state of one key.
type HandoverKey struct {
	Key     string     // the politeness key
	Host    string     // the host whose address decides its workbench entry
	Addr    netip.Addr // the host's address (invalid: not resolved)
	Gen     uint32     // the hand-overs of the key known
	MovedTo Peer       // the agent it was handed over to (Self: held here)
}

// MaxRestoredHandovers bounds the restored keys kept until a record of
// theirs comes.
const MaxRestoredHandovers = 1 << 21

// HandoverCheckpointSink is a CheckpointSink that also saves the keys'
// hand-over state: CheckpointHandovers is called in step 2, from the
// scheduler goroutine, with the state as of the snapshot.
type HandoverCheckpointSink interface {
	CheckpointSink
	CheckpointHandovers(keys []HandoverKey) error
}

// AppendHandoverKey appends k's record to dst.
func AppendHandoverKey(dst []byte, k HandoverKey) []byte {
	dst = binary.BigEndian.AppendUint32(dst, k.Gen)
	a := k.Addr.Unmap().AsSlice()
	dst = append(append(dst, byte(len(a))), a...)
	dst = binary.AppendUvarint(dst, uint64(len(k.Key)))
	dst = append(dst, k.Key...)
	dst = binary.AppendUvarint(dst, uint64(len(k.Host)))
	dst = append(dst, k.Host...)
	return append(dst, k.MovedTo...)
}

var errHandoverKey = errors.New("frontier: hand-over key record cut short or malformed")

// ParseHandoverKey decodes a record of AppendHandoverKey.
func ParseHandoverKey(rec []byte) (HandoverKey, error) {
	var k HandoverKey
	if len(rec) < 5 || (rec[4] != 0 && rec[4] != 4 && rec[4] != 16) || len(rec) < 5+int(rec[4]) {
		return k, errHandoverKey
	}
	k.Gen = binary.BigEndian.Uint32(rec)
	n := int(rec[4])
	k.Addr, _ = netip.AddrFromSlice(rec[5 : 5+n])
	rest := rec[5+n:]
	var ok bool
	if k.Key, rest, ok = cutLenString(rest); !ok {
		return k, errHandoverKey
	}
	if k.Host, rest, ok = cutLenString(rest); !ok {
		return k, errHandoverKey
	}
	k.MovedTo = Peer(rest)
	return k, nil
}

// cutLenString splits a uvarint-length-prefixed string off b.
func cutLenString(b []byte) (string, []byte, bool) {
	l, k := binary.Uvarint(b)
	if k <= 0 || uint64(len(b)-k) < l {
		return "", nil, false
	}
	return string(b[k : k+int(l)]), b[k+int(l):], true
}

// restoreHandovers keeps keys for the visit states to come (New).
func (s *scheduler) restoreHandovers(keys []HandoverKey) {
	if len(keys) > MaxRestoredHandovers {
		s.f.log.Warn("frontier: more saved hand-over keys than kept; the rest are placed as new", "saved", len(keys), "kept", MaxRestoredHandovers)
		keys = keys[:MaxRestoredHandovers]
	}
	s.restored = make(map[string]HandoverKey, len(keys))
	for _, k := range keys {
		s.restored[k.Key] = k
	}
}

// handoverKeys returns the hand-over state of every key that has one:
// the visit states that know of a hand-over, and the restored keys not
// made visit states yet. Sorted by key.
func (s *scheduler) handoverKeys() []HandoverKey {
	if _, ok := s.f.cfg.Router.(ReadyRouter); !ok && len(s.restored) == 0 {
		return nil // no key is ever handed over
	}
	var out []HandoverKey
	for _, v := range s.states {
		if v.gen == 0 || v.broken() || v.host == nil {
			continue
		}
		k := HandoverKey{Key: v.key, Host: v.host.name, Gen: v.gen, MovedTo: v.movedTo()}
		if v.host.resolved {
			k.Addr = v.host.addr
		}
		out = append(out, k)
	}
	for _, k := range s.restored {
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b HandoverKey) int { return strings.Compare(a.Key, b.Key) })
	return out
}

// restoredState makes key's visit state from its saved hand-over state, if
// it has one (nil if not): its host at the saved address, its generation,
// and, for a key handed over, withdrawn and moved to the agent it went to.
func (s *scheduler) restoredState(key string, keyIsPrefix bool) *visitState {
	k, ok := s.restored[key]
	if !ok {
		return nil
	}
	delete(s.restored, key)
	h := s.dns.host(k.Host)
	if !h.resolved {
		s.adopt(h, k.Addr)
	}
	if k.MovedTo == Self || !h.resolved {
		return s.newVisitState(key, keyIsPrefix, k.Host, k.Gen)
	}
	s.nextID++
	v := &visitState{key: key, keyIsPrefix: keyIsPrefix, id: s.nextID, heapIndex: -1, gen: k.Gen, host: h}
	v.setMovedTo(k.MovedTo)
	s.states[key] = v
	return v
}

// HandoverKeys returns the keys' hand-over state, to give the next run's
// Config.Handovers. Call it after Run has returned.
func (f *Frontier) HandoverKeys() []HandoverKey { return f.sched.handoverKeys() }
