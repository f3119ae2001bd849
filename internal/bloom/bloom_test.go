package bloom

import (
	"bytes"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"flag"
	"os"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/filter.golden")

func key(i int) []byte {
	s := sha1.Sum(binary.LittleEndian.AppendUint64(nil, uint64(i)))
	return s[:]
}

// TestRateAndGrowth: no false negatives; the measured false-positive rate
// of a filter grown to many stages stays within its budget.
func TestRateAndGrowth(t *testing.T) {
	const n, probes, rate = 50_000, 400_000, 1e-3
	f := New(1000, rate)
	for i := range n {
		if f.TestAndAdd(key(i)) {
			// A false positive at insertion: counted like a probe's.
			continue
		}
	}
	for i := range n {
		if !f.Test(key(i)) {
			t.Fatalf("key %d added, not found", i)
		}
	}
	fp := 0
	for i := n; i < n+probes; i++ {
		if f.Test(key(i)) {
			fp++
		}
	}
	st := f.Stats()
	got := float64(fp) / probes
	t.Logf("%d keys in %d stages, %d bytes: %d false positives in %d probes (%.2g), estimated %.2g, budget %g",
		st.Keys, st.Stages, st.Bytes, fp, probes, got, st.Estimated, rate)
	// The budget bounds the expected rate; the measured one may exceed it by chance.
	if st.Stages < 5 || got > 1.25*rate || st.Estimated > rate {
		t.Errorf("rate %.3g (estimated %.3g) with %d stages; want at most %g", got, st.Estimated, st.Stages, rate)
	}
	if small := New(1000, 1e-9); small.Stats().Bytes > 8<<10 {
		t.Errorf("an empty filter at 1e-9 takes %d bytes", small.Stats().Bytes)
	}
}

// TestFormatGolden pins the serialisation and checks the round trip.
func TestFormatGolden(t *testing.T) {
	f := New(64, 1e-2)
	for i := range 100 { // two stages
		f.TestAndAdd(key(i))
	}
	var b bytes.Buffer
	if _, err := f.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	if *update {
		os.WriteFile("testdata/filter.golden", b.Bytes(), 0o644)
	}
	golden, err := os.ReadFile("testdata/filter.golden")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b.Bytes(), golden) {
		t.Fatal("the serialised filter differs from testdata/filter.golden (a format change needs a new magic)")
	}
	g, err := ReadFrom(bytes.NewReader(golden))
	if err != nil {
		t.Fatal(err)
	}
	if g.Stats() != f.Stats() {
		t.Errorf("read back %+v; want %+v", g.Stats(), f.Stats())
	}
	for i := range 100 {
		if !g.Test(key(i)) {
			t.Fatalf("key %d lost in the round trip", i)
		}
	}
	for _, bad := range [][]byte{nil, []byte("PDIGEST1xxxxxxxx"), golden[:40], append([]byte("PBLOOM01"), make([]byte, 20)...)} {
		if _, err := ReadFrom(bytes.NewReader(bad)); err == nil {
			t.Errorf("ReadFrom accepted %q", bad)
		}
	}
	if _, err := ReadFrom(bytes.NewReader([]byte("old filter bytes"))); !errors.Is(err, ErrFormat) {
		t.Errorf("another format: %v; want ErrFormat", err)
	}
}

// BenchmarkDigestsAtScale fills a filter as a crawl of 10^8 known URLs
// fills its digest filters (one digest per page: 2.3·10^6 pages in the
// generated web of petrel bench scale, first stage 65,536 digests as the
// crawl's) and reports its stages, bytes per digest, and the
// false-positive rate estimated from its fill beside the one measured on
// 10^7 digests not added, at the crawl's budget of 10^-9 (where the
// measured count is expected to be 0) and at 10^-4 (where it checks the
// estimate). Run it with -benchtime 1x.
func BenchmarkDigestsAtScale(b *testing.B) {
	const n, probes = 2_300_000, 10_000_000
	for range b.N {
		for _, rate := range []float64{1e-9, 1e-4} {
			f := New(1<<16, rate)
			for i := range n {
				f.TestAndAdd(key(i))
			}
			fp := 0
			for i := n; i < n+probes; i++ {
				if f.Test(key(i)) {
					fp++
				}
			}
			st := f.Stats()
			b.Logf("budget %g: %d digests in %d stages, %.1f MiB (%.1f bits a digest); %d false positives in %d probes (%.2g), estimated %.2g",
				rate, st.Keys, st.Stages, float64(st.Bytes)/(1<<20), float64(st.Bytes*8)/float64(st.Keys), fp, probes, float64(fp)/probes, st.Estimated)
		}
	}
}
