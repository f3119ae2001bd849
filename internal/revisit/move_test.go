package revisit

import (
	"testing"
	"time"

	"github.com/petrel-crawler/petrel/internal/frontier"
)

// TestMoveBetweenSchedules: an issued entry sent to another schedule is
// adopted there, due as it was, and forgotten by the sender; sent again
// (a crash before the Forget) it is refused; an entry that changed after
// it was read is not forgotten; an entry a fetch holds is not replaced;
// one that came back before its Forget replaces the issued one, which
// then stays.
func TestMoveBetweenSchedules(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1_800_000_000, 0)}
	isA, isB := &issued{}, &issued{}
	a := openTest(t, t.TempDir(), clk, isA, false)
	defer a.Close()
	b := openTest(t, t.TempDir(), clk, isB, false)
	defer b.Close()
	meta := frontier.Meta{Depth: 1}.Append(nil)
	urls := []string{"http://a.test/1", "http://a.test/2", "http://c.test/1"}
	for i, u := range urls {
		if _, err := a.Visited(u, meta, Visit{Time: clk.now(), Status: 200, Digest: [20]byte{byte(i)}, ETag: `"v1"`}); err != nil {
			t.Fatal(err)
		}
	}
	clk.add(11 * time.Second)
	if n, _, err := a.issueDue(clk.now(), 10); n != 3 || err != nil {
		t.Fatalf("issued %d of 3 (%v)", n, err)
	}
	isA.take()

	sent, err := a.Entries("", 10)
	if err != nil || len(sent) != 3 {
		t.Fatalf("entries: %d, %v", len(sent), err)
	}
	if m, u, err := frontier.SplitRecord(sent[0].Rec); err != nil || string(u) != urls[0] || m.Path.Last() != frontier.HopRevisit {
		t.Fatalf("the entry's record: %v %q %v", m, u, err)
	}
	for _, e := range sent {
		if ok, err := b.Adopt(e.URL, e.State); !ok || err != nil {
			t.Fatalf("adopt %s: %v %v", e.URL, ok, err)
		}
	}
	if n, err := a.Forget(sent); n != 3 || err != nil {
		t.Fatalf("forgot %d of 3 (%v)", n, err)
	}
	if fa, fb := a.Figures(), b.Figures(); fa.Scheduled != 0 || fa.Issued != 0 || fb.Scheduled != 3 || fb.Issued != 0 {
		t.Fatalf("after the move: sender %+v, receiver %+v", fa, fb)
	}
	for _, e := range sent { // sent again: a crash before the Forget
		if ok, err := b.Adopt(e.URL, e.State); ok || err != nil {
			t.Fatalf("the same entry adopted twice: %v %v", ok, err)
		}
	}
	if n, _, err := b.issueDue(clk.now(), 10); n != 3 || err != nil {
		t.Fatalf("the receiver issued %d of 3 overdue (%v)", n, err)
	}
	if got := isB.take(); len(got) != 3 {
		t.Fatalf("the receiver issued %v", got)
	}
	st, ok := b.Claim(urls[0])
	if !ok || st.ETag != `"v1"` {
		t.Fatalf("the receiver's claim: %+v %v (the validators move with the entry)", st, ok)
	}
	if ok, _ := b.Adopt(urls[0], sent[0].State); ok {
		t.Fatal("an entry adopted while a fetch holds its URL")
	}

	// An entry read, then visited, is not forgotten.
	e, _, err := b.Entry(urls[0])
	if err != nil {
		t.Fatal(err)
	}
	clk.add(time.Second)
	if _, err := b.Visited(urls[0], meta, Visit{Time: clk.now(), Status: 304}); err != nil {
		t.Fatal(err)
	}
	if n, err := b.Forget([]Entry{e}); n != 0 || err != nil {
		t.Fatalf("forgot %d entries that changed since they were read (%v)", n, err)
	}

	// An issued entry on its way out that comes back: replaced, kept.
	out, _, _ := b.Entry(urls[1])
	back := out
	if ok, err := b.Adopt(back.URL, back.State); !ok || err != nil {
		t.Fatalf("an issued entry that came back: %v %v", ok, err)
	}
	if n, _ := b.Forget([]Entry{out}); n != 0 {
		t.Fatal("the entry that came back was forgotten")
	}
	if st, ok, _ := b.Lookup(urls[1]); !ok || st.Issued {
		t.Fatalf("the entry that came back: %+v %v, want due again", st, ok)
	}
	if _, ok := b.Claim(urls[1]); ok {
		t.Fatal("the frontier's task of the replaced entry was claimed: its due time would be done twice")
	}
	if f := b.Figures(); f.Scheduled != 3 || f.Issued != 1 {
		t.Fatalf("receiver %+v, want 3 scheduled, 1 issued", f)
	}
}
