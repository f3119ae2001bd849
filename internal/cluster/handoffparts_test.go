package cluster

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestHandoffPartsBounded: a hand-off of 4*10^5 keys' counts (the widest
// keys and counts JSON spells) and 1.2*10^6 seen hashes goes in parts
// numbered one after another, each within MaxHandoffBytes on the wire,
// that carry every count and hash once, every hash before any count; a
// hand-off of nothing is one part.
func TestHandoffPartsBounded(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	counts := make(map[uint64]int64, 400_000)
	for len(counts) < 400_000 {
		counts[math.MaxUint64-r.Uint64N(1<<40)] = math.MinInt64 + r.Int64N(1000)
	}
	seen := make([]uint64, 1_200_000)
	for i := range seen {
		seen[i] = r.Uint64()
	}
	parts := HandoffParts(7, 3, seen, counts)
	gotCounts, gotSeen := map[uint64]int64{}, 0
	for i, p := range parts {
		if p.Epoch != 7 || p.Seq != 3+uint64(i) {
			t.Fatalf("part %d: epoch %d seq %d", i, p.Epoch, p.Seq)
		}
		wire := encodeHandoff(p)
		if len(wire) > MaxHandoffBytes {
			t.Fatalf("part %d: %d bytes on the wire, over %d", i, len(wire), MaxHandoffBytes)
		}
		d, err := decodeHandoff(wire)
		if err != nil {
			t.Fatal(err)
		}
		if len(d.Seen) > 0 && len(gotCounts) > 0 {
			t.Fatalf("part %d: seen hashes after counts", i)
		}
		for k, c := range d.Counts {
			if _, dup := gotCounts[k]; dup {
				t.Fatalf("count key %x in two parts", k)
			}
			gotCounts[k] = c
		}
		for j, h := range d.Seen {
			if h != seen[gotSeen+j] {
				t.Fatalf("part %d: seen hash %d out of order", i, j)
			}
		}
		gotSeen += len(d.Seen)
	}
	if len(gotCounts) != len(counts) || gotSeen != len(seen) {
		t.Fatalf("%d counts and %d hashes arrived, want %d and %d", len(gotCounts), gotSeen, len(counts), len(seen))
	}
	for k, c := range counts {
		if gotCounts[k] != c {
			t.Fatalf("count of %x: %d, want %d", k, gotCounts[k], c)
		}
	}
	if min := (8*len(seen)+maxCountEntryBytes*len(counts))/handoffPartRoom + 1; len(parts) < min {
		t.Fatalf("%d parts, want at least %d", len(parts), min)
	}
	t.Logf("%d parts; %d counts per part at most", len(parts), HandoffCountsPerPart)
	if ps := HandoffParts(1, 1, nil, nil); len(ps) != 1 || ps[0].Seq != 1 || len(ps[0].Seen) != 0 || ps[0].Counts != nil {
		t.Fatalf("an empty hand-off: %+v", ps)
	}
}
