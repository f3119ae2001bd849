package revisit

import (
	"context"
	"math"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/petrel-crawler/petrel/internal/frontier"
)

// fakeClock is a clock the test moves.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// issued collects what a Schedule issues.
type issued struct {
	mu   sync.Mutex
	urls []string
}

func (is *issued) issue(rec []byte) error {
	m, u, err := frontier.SplitRecord(rec)
	if err != nil {
		return err
	}
	if m.Path.Last() != frontier.HopRevisit {
		return nil
	}
	is.mu.Lock()
	is.urls = append(is.urls, string(u))
	is.mu.Unlock()
	return nil
}

func (is *issued) take() []string {
	is.mu.Lock()
	defer is.mu.Unlock()
	u := is.urls
	is.urls = nil
	return u
}

func openTest(t *testing.T, dir string, clk *fakeClock, is *issued, reissue bool) *Schedule {
	t.Helper()
	s, err := Open(Config{Dir: dir, Settings: Settings{Policy: PolicyHeritrix, Min: time.Second, Max: 10 * time.Second},
		Issue: is.issue, Reissue: reissue, Now: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestScheduleExactlyOnce: URLs visited are due one interval later, issued
// once with the revisit hop, claimed by one fetch only, scheduled again
// when visited; after a restart that is a crash the URLs still issued are
// issued again and the duplicates of a due time done are refused, and
// after a clean one nothing is issued twice.
func TestScheduleExactlyOnce(t *testing.T) {
	dir := t.TempDir()
	clk := &fakeClock{t: time.Unix(1_800_000_000, 0)}
	is := &issued{}
	s := openTest(t, dir, clk, is, false)
	meta := frontier.Meta{Depth: 2}.Append(nil)
	urls := []string{"http://a.test/1", "http://a.test/2", "http://b.test/1"}
	for i, u := range urls {
		due, err := s.Visited(u, meta, Visit{Time: clk.now(), Status: 200, Digest: [20]byte{byte(i)}, ETag: `"e"`})
		if err != nil || due.Sub(clk.now()) != 10*time.Second { // 24×Min within Max
			t.Fatalf("first visit of %s: due %v, %v", u, due.Sub(clk.now()), err)
		}
	}
	if n, _, err := s.issueDue(clk.now(), 10); n != 0 || err != nil {
		t.Fatalf("issued %d before due (%v)", n, err)
	}
	clk.add(11 * time.Second)
	if n, _, err := s.issueDue(clk.now(), 10); n != 3 || err != nil {
		t.Fatalf("issued %d of 3 due (%v)", n, err)
	}
	if got := is.take(); len(got) != 3 {
		t.Fatalf("issued %v", got)
	}
	st, ok := s.Claim(urls[0])
	if !ok || st.ETag != `"e"` || !st.Issued {
		t.Fatalf("claim: %+v %v", st, ok)
	}
	if _, ok := s.Claim(urls[0]); ok {
		t.Fatal("a second fetch claimed the same due time")
	}
	clk.add(time.Second)
	if _, err := s.Visited(urls[0], meta, Visit{Time: clk.now(), Status: 304}); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Claim(urls[0]); ok {
		t.Fatal("a duplicate task of a due time done was claimed")
	}
	if f := s.Figures(); f.Scheduled != 3 || f.Issued != 2 || f.NotModified != 1 || f.Revisits != 1 {
		t.Fatalf("figures %+v", f)
	}
	if st, _, _ := s.Lookup(urls[0]); st.Interval != int64(10*time.Second) || st.Visits != 1 || st.Changes != 0 {
		t.Fatalf("after a 304: %+v", st)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// A clean restart: the two issued stay issued, nothing issued again.
	s = openTest(t, dir, clk, is, false)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- s.Run(ctx) }()
	time.Sleep(50 * time.Millisecond)
	cancel()
	<-done
	if got := is.take(); len(got) != 0 {
		t.Fatalf("a clean restart issued again %v", got)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// A crash: the two issued are issued again, and each claimed once.
	s = openTest(t, dir, clk, is, true)
	defer s.Close()
	if err := s.reissue(); err != nil {
		t.Fatal(err)
	}
	got := is.take()
	if len(got) != 2 || got[0] == urls[0] || got[1] == urls[0] {
		t.Fatalf("issued again %v, want %v", got, urls[1:])
	}
	for _, u := range got {
		if _, ok := s.Claim(u); !ok {
			t.Errorf("%s: not claimed", u)
		}
		if err := s.Failed(u); err != nil {
			t.Fatal(err)
		}
		if _, ok := s.Claim(u); ok {
			t.Errorf("%s claimed after its failure rescheduled it", u)
		}
	}
	if f := s.Figures(); f.Issued != 0 || f.Scheduled != 3 {
		t.Fatalf("figures %+v", f)
	}
}

// TestStateRoundTrip: a State decodes as encoded.
func TestStateRoundTrip(t *testing.T) {
	st := State{Due: 5, Issued: true, Seq: 7, Interval: 9, Last: 11, Visits: 3, Changes: 2, Exposure: 13, Timed: 1, LMWrong: true,
		ETag: `W/"x"`, LastModified: 17, Digest: [20]byte{1}, RecordID: [16]byte{2}, RecordDate: 19, Size: 23, Hint: 29}
	st.Meta[0] = 1
	enc := appendState(nil, &st)
	got, err := decodeState(enc)
	if err != nil || got != st {
		t.Fatalf("%+v, %v; want %+v", got, err, st)
	}
	if _, err := decodeState(enc[:fixedLen-1]); err == nil {
		t.Fatal("a short record decoded")
	}
	// Version 2: the same fields without the flags, which decode as
	// false; version 1 without Size and Hint either, which decode as 0.
	end := fixedLen - 2 - 16 // where Size begins
	v2 := append(append([]byte{2}, enc[1:end+16]...), enc[end+17:]...)
	want := st
	want.LMWrong = false
	if got, err := decodeState(v2); err != nil || got != want {
		t.Fatalf("version 2: %+v, %v; want %+v", got, err, want)
	}
	v1 := append(append([]byte{1}, enc[1:end]...), enc[end+17:]...)
	want.Size, want.Hint = 0, 0
	if got, err := decodeState(v1); err != nil || got != want {
		t.Fatalf("version 1: %+v, %v; want %+v", got, err, want)
	}
	if _, err := decodeState(append([]byte{4}, enc[1:]...)); err == nil {
		t.Fatal("a record of an unknown version decoded")
	}
}

// TestFiguresFreshnessAndBytes: the estimated freshness is the mean of
// each URL's expected freshness at its rate and interval, kept across a
// restart; a 304 counts the bytes its URL's last full capture took.
func TestFiguresFreshnessAndBytes(t *testing.T) {
	dir := t.TempDir()
	clk := &fakeClock{t: time.Unix(1_800_000_000, 0)}
	is := &issued{}
	s := openTest(t, dir, clk, is, false)
	meta := frontier.Meta{Depth: 1}.Append(nil)
	urls := []string{"http://a.test/1", "http://a.test/2"}
	for _, u := range urls {
		if _, err := s.Visited(u, meta, Visit{Time: clk.now(), Status: 200, Bytes: 10_000, ETag: `"e"`, Full: true}); err != nil {
			t.Fatal(err)
		}
	}
	clk.add(11 * time.Second)
	if n, _, err := s.issueDue(clk.now(), 10); n != 2 || err != nil {
		t.Fatalf("issued %d of 2 (%v)", n, err)
	}
	if _, ok := s.Claim(urls[0]); !ok {
		t.Fatal("not claimed")
	}
	if _, err := s.Visited(urls[0], meta, Visit{Time: clk.now(), Status: 304, Bytes: 300}); err != nil {
		t.Fatal(err)
	}
	want := 0.0
	for _, u := range urls {
		st, _, _ := s.Lookup(u)
		want += freshness(st.Rate(s.pol.prior()), st.Interval) / 2
	}
	f := s.Figures()
	if f.BytesSaved != 9_700 || f.Freshness <= 0 || f.Freshness >= 1 || math.Abs(f.Freshness-want) > 1e-9 {
		t.Fatalf("figures %+v, want freshness %.6f and 9,700 bytes saved", f, want)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openTest(t, dir, clk, is, false)
	defer s.Close()
	if g := s.Figures(); math.Abs(g.Freshness-want) > 1e-9 {
		t.Fatalf("after a restart freshness %.6f, want %.6f", g.Freshness, want)
	}
}

// TestScheduledLater: first fetches recorded by Scheduled wait for one
// transaction: committed by Sync, or by the call that fills the batch,
// and then scheduled as Visited would have.
func TestScheduledLater(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1_800_000_000, 0)}
	s := openTest(t, t.TempDir(), clk, &issued{}, false)
	defer s.Close()
	meta := frontier.Meta{Depth: 1}.Append(nil)
	if err := s.Scheduled("http://a.test/0", meta, Visit{Time: clk.now(), Status: 200, Full: true}); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.Lookup("http://a.test/0"); ok || s.Figures().Scheduled != 0 {
		t.Fatal("a first visit was committed before its batch")
	}
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	if st, ok, _ := s.Lookup("http://a.test/0"); !ok || st.Due != clk.now().Add(10*time.Second).UnixNano() {
		t.Fatalf("after Sync: %+v, %v", st, ok)
	}
	for i := 1; i <= laterBatch; i++ {
		if err := s.Scheduled("http://b.test/"+strconv.Itoa(i), meta, Visit{Time: clk.now(), Status: 200, Full: true}); err != nil {
			t.Fatal(err)
		}
	}
	if f := s.Figures(); f.Scheduled != 1+laterBatch {
		t.Fatalf("scheduled %d after a full batch, want %d", f.Scheduled, 1+laterBatch)
	}
}
