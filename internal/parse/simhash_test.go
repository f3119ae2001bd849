package parse

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/petrel-crawler/petrel/internal/testweb"
	"github.com/petrel-crawler/petrel/internal/urlx"
)

func simOf(t testing.TB, page string) (uint64, int) {
	t.Helper()
	base, _ := urlx.Parse("http://a.test/")
	r := HTML(base, http.Header{}, []byte(page), Options{})
	return r.SimHash, r.Shingles
}

func TestSimHashBasics(t *testing.T) {
	words := strings.Fields(strings.Repeat("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau upsilon ", 10))
	for i := range words { // make the words distinct
		words[i] += fmt.Sprint(string(rune('a'+i%26)), string(rune('a'+i/26)))
	}
	text := strings.Join(words, " ")
	a, n := simOf(t, "<p>"+text+"</p>")
	if n != len(words)-ShingleWords+1 {
		t.Errorf("shingles = %d, want %d", n, len(words)-ShingleWords+1)
	}
	cases := []struct {
		name   string
		page   string
		maxBit int // Hamming distance at most
		minBit int // at least
	}{
		{"same text", "<p>" + text + "</p>", 0, 0},
		{"case and spacing", "<div>" + strings.ToUpper(text) + "\n\n</div>", 0, 0},
		{"digits ignored", "<p>" + strings.Replace(text, " ", " 2026 ", 5) + "</p>", 0, 0},
		{"script ignored", "<p>" + text + "</p><script>var x = 'other words entirely';</script>", 0, 0},
		{"one word changed", "<p>" + strings.Replace(text, words[50], "zzz", 1) + "</p>", 8, 0},
		{"unrelated", "<p>" + strings.Repeat("completely different words here ", 50) + "</p>", 64, 12},
	}
	for _, c := range cases {
		b, _ := simOf(t, c.page)
		if d := Hamming(a, b); d > c.maxBit || d < c.minBit {
			t.Errorf("%s: distance %d, want in [%d, %d]", c.name, d, c.minBit, c.maxBit)
		}
	}
	if s, n := simOf(t, "<p></p>"); s != 0 || n != 0 {
		t.Errorf("empty page: %x, %d shingles", s, n)
	}
	if _, n := simOf(t, "<p>word</p>"); n != 1 {
		t.Errorf("one word: %d shingles, want 1", n)
	}
}

func TestHamming(t *testing.T) {
	for _, c := range []struct {
		a, b uint64
		want int
	}{{0, 0, 0}, {0, 1, 1}, {0, ^uint64(0), 64}, {0xf0, 0x0f, 8}} {
		if got := Hamming(c.a, c.b); got != c.want {
			t.Errorf("Hamming(%x, %x) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

// nearDupDistance is the agent's default --near-dup-distance, restated here
// (the agent imports this package, not the reverse) so that this test
// measures the shipped setting.
const nearDupDistance = 12

// TestSimHashSyntheticWeb measures precision and recall of SimHash at the
// agent's default distance on the synthetic web's near-duplicate ground
// truth, over every pair of the case's pages, for several synthetic webs.
func TestSimHashSyntheticWeb(t *testing.T) {
	var tp, fp, fn int
	for seed := int64(1); seed <= 12; seed++ {
		a, b, c := simHashPairs(t, seed)
		tp, fp, fn = tp+a, fp+b, fn+c
	}
	precision := float64(tp) / float64(max(tp+fp, 1))
	recall := float64(tp) / float64(max(tp+fn, 1))
	t.Logf("12 webs, distance <= %d: %d near-duplicate pairs flagged, %d false, %d missed: precision %.2f, recall %.2f",
		nearDupDistance, tp, fp, fn, precision, recall)
	if precision < 1 || recall < 1 {
		t.Errorf("precision %.2f, recall %.2f; want 1 and 1 on the synthetic web", precision, recall)
	}
}

// simHashPairs fetches the near-dups case of the web of the given seed and
// counts the pairs of its pages flagged rightly (tp), wrongly (fp) and not
// flagged though near-duplicates (fn).
func simHashPairs(t *testing.T, seed int64) (tp, fp, fn int) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := testweb.Start(ctx, testweb.Config{Hosts: 2, Hostile: true, Seed: seed,
		FirstIP: netip.MustParseAddr("127.71.0.1"), BombBytes: 1 << 16, HugeBytes: 1 << 16})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	addrs := map[string]string{}
	for _, line := range strings.Split(string(w.HostsFile()), "\n") {
		if f := strings.Fields(line); len(f) == 2 {
			addrs[f[1]] = f[0]
		}
	}
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			host, port, _ := net.SplitHostPort(addr)
			return (&net.Dialer{}).DialContext(ctx, "tcp", net.JoinHostPort(addrs[host], port))
		}}}
	defer client.CloseIdleConnections()
	origin, ok := w.Origin("near-dups." + testweb.HostileDomain)
	if !ok {
		t.Fatal("no near-dups host")
	}
	group := map[string]int{}
	for i, g := range w.NearDuplicates() {
		for _, u := range g {
			group[u] = i + 1
		}
	}
	type page struct {
		url string
		sim uint64
	}
	var pages []page
	for i := 1; i <= 8; i++ {
		u := fmt.Sprintf("%s/n/%d.html", origin, i)
		resp, err := client.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		base, _ := urlx.Parse(u)
		r := HTML(base, resp.Header, body, Options{})
		pages = append(pages, page{u, r.SimHash})
	}
	var dist bytes.Buffer
	for i := range pages {
		for j := i + 1; j < len(pages); j++ {
			d := Hamming(pages[i].sim, pages[j].sim)
			fmt.Fprintf(&dist, "%d-%d:%d ", i+1, j+1, d)
			truth := group[pages[i].url] != 0 && group[pages[i].url] == group[pages[j].url]
			flagged := d <= nearDupDistance
			switch {
			case truth && flagged:
				tp++
			case flagged:
				fp++
			case truth:
				fn++
			}
		}
	}
	t.Logf("seed %d: pairwise distances: %s", seed, dist.String())
	return tp, fp, fn
}

func BenchmarkSimHash(b *testing.B) {
	text := []byte(strings.Repeat("the quick brown fox jumps over the lazy dog 42 times ", 400))
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	var s simhasher
	for b.Loop() {
		s.init()
		s.text(text)
		s.sum()
	}
}

// TestSimHashLongWords checks that a word's bytes do not cancel or commute
// in blocks of 8: words longer than 8 bytes that differ only by the order
// of their 8-byte halves are different features.
func TestSimHashLongWords(t *testing.T) {
	a, _ := simOf(t, "<p>abcdefghijklmnop tail</p>")
	b, _ := simOf(t, "<p>ijklmnopabcdefgh tail</p>")
	if a == b {
		t.Error("swapping the 8-byte halves of a 16-byte word left the fingerprint unchanged")
	}
	c, _ := simOf(t, "<p>abcdefghabcdefgh tail</p>")
	d, _ := simOf(t, "<p>zyxwvutszyxwvuts tail</p>")
	if c == d {
		t.Error("two words each made of one 8-byte block twice got the same fingerprint")
	}
}

// TestCountVotes holds the lane counting to a count bit by bit, for
// batches of every size up to voteBatch.
func TestCountVotes(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	for n := 0; n <= voteBatch; n++ {
		var s simhasher
		s.init()
		var want [64]int32
		for i := range n {
			h := rng.Uint64()
			if i%7 == 0 {
				h = ^uint64(0) // every lane at its fullest
			}
			s.batch[i] = h
			for b := range 64 {
				want[b] += int32(h >> b & 1)
			}
		}
		s.nb = n
		s.countVotes()
		if s.ones != want || s.nb != 0 {
			t.Fatalf("batch of %d: ones %v, want %v", n, s.ones, want)
		}
	}
}
