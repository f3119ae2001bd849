package sieve

import (
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
)

func TestRiceRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	cases := map[string][]uint64{
		"one":                  {42},
		"two extremes":         {0, math.MaxUint64},
		"dense":                {1, 2, 3, 4, 5, 6, 7, 8},
		"huge gap after dense": {1, 2, 3, 4, 5, 1 << 62, 1<<62 + 1},
	}
	for _, n := range []int{10, 1000, blockKeys} {
		hs := make([]uint64, n)
		for i := range hs {
			hs[i] = rng.Uint64()
		}
		slices.Sort(hs)
		hs = slices.Compact(hs)
		cases["random"+string(rune('0'+len(cases)))] = hs
	}
	for name, hs := range cases {
		t.Run(name, func(t *testing.T) {
			enc := riceEncode(nil, hs)
			got, err := riceDecode(nil, enc, len(hs))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, hs) {
				t.Fatalf("round trip differs")
			}
			if len(hs) == blockKeys {
				// 8192 random hashes: gaps of about 2^51, so about 53.5 bits each.
				if bpk := float64(len(enc)) / float64(len(hs)); bpk > 7 {
					t.Fatalf("%.2f bytes per key", bpk)
				}
			}
			if len(enc) > 9 {
				if _, err := riceDecode(nil, enc[:len(enc)-len(enc)/3], len(hs)); err == nil && len(hs) > 100 {
					t.Fatal("truncated block decoded without error")
				}
			}
		})
	}
}

func TestSortPairs(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{0, 1, 47, 48, 49, 1000, 100000} {
		for _, dist := range []string{"uniform", "few", "sharedprefix"} {
			ps := make([]pair, n)
			for i := range ps {
				h := rng.Uint64()
				switch dist {
				case "few":
					h = uint64(rng.IntN(5)) << 60
				case "sharedprefix":
					h = 0xabcdef<<40 | h>>24
				}
				ps[i] = pair{h: h, i: uint32(i)}
			}
			want := slices.Clone(ps)
			slices.SortStableFunc(want, func(a, b pair) int {
				if a.h < b.h {
					return -1
				} else if a.h > b.h {
					return 1
				}
				return 0
			})
			sortPairs(ps)
			for i := range ps {
				if ps[i].h != want[i].h {
					t.Fatalf("n=%d %s: position %d has %x, want %x", n, dist, i, ps[i].h, want[i].h)
				}
			}
			seen := make([]bool, n)
			for _, p := range ps {
				if seen[p.i] {
					t.Fatalf("index %d twice", p.i)
				}
				seen[p.i] = true
			}
		}
	}
}

func TestManifestRoundTrip(t *testing.T) {
	m := manifest{flags: 1, gen: 9, buckets: []bucketMeta{{gen: 9, count: 3, size: 100}, {}}}
	got, err := decodeManifest(encodeManifest(m))
	if err != nil {
		t.Fatal(err)
	}
	if got.gen != m.gen || got.flags != m.flags || !slices.Equal(got.buckets, m.buckets) {
		t.Fatalf("got %+v, want %+v", got, m)
	}
}

func TestURLCache(t *testing.T) {
	c := NewURLCache(1 << 12) // 512 entries, 128 sets of 4
	if c.Bytes() != 1<<12 {
		t.Fatalf("Bytes() = %d", c.Bytes())
	}
	tests := []struct {
		name string
		hash uint64
		want bool
	}{
		{"first sight", 12345, false},
		{"repeat", 12345, true},
		{"other", 999, false},
		{"zero", 0, false},
		{"zero again", 0, true},
		{"first still there", 12345, true},
	}
	for _, tc := range tests {
		if got := c.Seen(tc.hash); got != tc.want {
			t.Fatalf("%s: Seen(%d) = %v, want %v", tc.name, tc.hash, got, tc.want)
		}
	}

	// Recent hashes hit; hashes pushed out by many newer ones miss.
	c = NewURLCache(1 << 12)
	rng := rand.New(rand.NewPCG(1, 2))
	old := make([]uint64, 100)
	for i := range old {
		old[i] = rng.Uint64()
		c.Seen(old[i])
	}
	for i := range old {
		if !c.Seen(old[i]) {
			t.Fatalf("recent hash %d missed", i)
		}
	}
	for i := 0; i < 100000; i++ {
		c.Seen(rng.Uint64())
	}
	misses := 0
	for _, h := range old {
		if !c.Seen(h) {
			misses++
		}
	}
	if misses < 90 {
		t.Fatalf("only %d of 100 old hashes evicted by 100000 newer ones", misses)
	}

	// A navigation-like stream: 90% repeats of a small working set.
	c = NewURLCache(1 << 16)
	nav := make([]uint64, 1000)
	for i := range nav {
		nav[i] = rng.Uint64()
	}
	hits := 0
	for i := 0; i < 50000; i++ {
		var hit bool
		if rng.IntN(10) < 9 {
			hit = c.Seen(nav[rng.IntN(len(nav))])
		} else {
			hit = c.Seen(rng.Uint64())
		}
		if hit {
			hits++
		}
	}
	if rate := float64(hits) / 50000; rate < 0.8 {
		t.Fatalf("hit rate %.2f on a 90%%-repeat stream", rate)
	}
}

func TestURLCacheConcurrent(t *testing.T) {
	c := NewURLCache(1 << 14) // 2048 entries: the 300 hashes fit
	var wg sync.WaitGroup
	var hits atomic.Int64
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := uint64(0); i < 5000; i++ {
				if c.Seen(i % 300) {
					hits.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if h := hits.Load(); h == 0 {
		t.Fatal("no hit among 20000 lookups of 300 hashes")
	}
	// Every hash is reported seen afterwards.
	for i := uint64(0); i < 300; i++ {
		if !c.Seen(i) {
			t.Fatalf("hash %d not seen after the concurrent lookups", i)
		}
	}
}
