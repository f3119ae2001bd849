package revisit

import (
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/petrel-crawler/petrel/internal/frontier"
	"github.com/petrel-crawler/petrel/internal/store"
)

// TestRecoverClaims: a schedule whose process died with revisits claimed
// settles them from the WARC files when it opens again. A claimed URL
// whose response (a 200) or 304 revisit record was written after its
// claim is visited from that record (its validators, digest, record ID
// and date), no longer issued, and its duplicate tasks refused; a claimed
// URL with no record, or only one older than its claim, is issued again;
// so is a URL issued and not claimed, or unclaimed (a stopped fetch).
func TestRecoverClaims(t *testing.T) {
	dir, warcDir := t.TempDir(), filepath.Join(t.TempDir(), "warc")
	// The WARC files are written after the claims (their modification
	// times are the real clock's): the test's clock runs behind it.
	clk := &fakeClock{t: time.Now().Add(-time.Minute)}
	is := &issued{}
	s := openTest(t, dir, clk, is, false)
	meta := frontier.Meta{Depth: 1}.Append(nil)
	const a, b, c, d, e = "http://a.test/stored", "http://a.test/not-modified", "http://b.test/older", "http://b.test/none", "http://c.test/unclaimed"
	first := Visit{Time: clk.now(), Status: 200, Digest: [20]byte{1}, ETag: `"e0"`, RecordID: [16]byte{9}, Full: true, Bytes: 1000}
	for _, u := range []string{a, b, c, d, e} {
		if _, err := s.Visited(u, meta, first); err != nil {
			t.Fatal(err)
		}
	}
	clk.add(11 * time.Second)
	if n, _, err := s.issueDue(clk.now(), 10); n != 5 || err != nil {
		t.Fatalf("issued %d of 5 (%v)", n, err)
	}
	is.take()
	for _, u := range []string{a, b, c, d, e} {
		if _, ok := s.Claim(u); !ok {
			t.Fatalf("%s not claimed", u)
		}
	}
	claimed := clk.now()
	s.Unclaim(e)
	if err := s.Close(); err != nil { // the claims are committed: as after a kill -9
		t.Fatal(err)
	}

	// The fetches of a and b were stored, c's record is the one before its claim.
	w, err := store.Open(store.Options{Dir: warcDir})
	if err != nil {
		t.Fatal(err)
	}
	req := []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	body := "HTTP/1.1 200 OK\r\nETag: \"e1\"\r\nLast-Modified: Mon, 07 Dec 2026 10:00:00 GMT\r\nContent-Length: 5\r\n\r\nhello"
	resA, err := w.Write(&store.Exchange{TargetURI: a, Date: claimed.Add(1500 * time.Nanosecond), Request: req, Response: []byte(body)})
	if err != nil {
		t.Fatal(err)
	}
	_, err = w.Write(&store.Exchange{TargetURI: b, Date: claimed.Add(time.Millisecond), Request: req,
		Response:    []byte("HTTP/1.1 304 Not Modified\r\nETag: \"e0\"\r\n\r\n"),
		NotModified: &store.Original{URI: b, Date: first.Time, RecordID: RecordIDString(first.RecordID)}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(&store.Exchange{TargetURI: c, Date: claimed.Add(-time.Millisecond), Request: req, Response: []byte(body)}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	s, err = Open(Config{Dir: dir, Settings: Settings{Policy: PolicyHeritrix, Min: time.Second, Max: 10 * time.Second},
		Issue: is.issue, Reissue: true, WARCDir: warcDir, Now: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.reissue(); err != nil {
		t.Fatal(err)
	}
	got := is.take()
	slices.Sort(got)
	if want := []string{d, c, e}; !slices.Equal(got, want) { // sorted
		t.Fatalf("issued again %v, want %v", got, want)
	}
	for _, u := range []string{a, b} {
		if _, ok := s.Claim(u); ok {
			t.Errorf("%s: claimed again although its revisit was stored", u)
		}
	}
	stA, _, _ := s.Lookup(a)
	if stA.Issued || stA.ETag != `"e1"` || stA.RecordID != ParseRecordID(resA.RecordID) || stA.Digest != ParseDigest(resA.PayloadDigest) ||
		stA.Last != claimed.Add(1500*time.Nanosecond).Truncate(time.Microsecond).UnixNano() || stA.RecordDate != stA.Last || stA.Visits != 1 || stA.Changes != 1 ||
		stA.LastModified != time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC).Unix() || stA.Due != stA.Last+stA.Interval {
		t.Errorf("%s after its recovered 200: %+v", a, stA)
	}
	stB, _, _ := s.Lookup(b)
	if stB.Issued || stB.ETag != `"e0"` || stB.RecordID != first.RecordID || stB.Visits != 1 || stB.Changes != 0 {
		t.Errorf("%s after its recovered 304: %+v", b, stB)
	}
	if f := s.Figures(); f.Issued != 3 || f.Revisits != 2 || f.NotModified != 1 {
		t.Errorf("figures %+v", f)
	}
	if cl, _, err := s.recordedClaims(); len(cl) != 0 || err != nil {
		t.Errorf("claims left after the recovery: %v (%v)", cl, err)
	}
	for _, u := range []string{c, d, e} {
		if _, ok := s.Claim(u); !ok {
			t.Errorf("%s, issued again, not claimed", u)
		}
	}
}
