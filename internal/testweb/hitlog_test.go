package testweb

import (
	"io"
	"net/http"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestHitLogFile writes the request log of a few requests to a file and
// reads it back: the same hits in the same order, every field kept, the
// times equal by the wall clock; a log with dropped hits is refused.
func TestHitLogFile(t *testing.T) {
	w := startWeb(t, Config{Hosts: 2, HostsPerIP: 2, PagesPerHost: 4, FirstIP: netip.MustParseAddr("127.31.67.1")})
	c := client(t, w, 5*time.Second)
	for _, u := range []string{w.Seeds()[0], strings.TrimSuffix(w.Seeds()[0], "/") + "/robots.txt", w.Seeds()[0] + "no-such-page"} {
		req, err := http.NewRequest(http.MethodGet, u, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("User-Agent", "Petrel/0.1 (test; agent7)")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	want := hitsAtLeast(w, 3)
	path := filepath.Join(t.TempDir(), "hits.jsonl")
	if err := w.WriteHitLog(path); err != nil {
		t.Fatal(err)
	}
	got, err := ReadHitLog(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) || len(got) != 3 {
		t.Fatalf("read %d hits, wrote %d (want 3)", len(got), len(want))
	}
	for i, h := range got {
		wh := want[i]
		if !h.Start.Equal(wh.Start) || !h.End.Equal(wh.End) {
			t.Errorf("hit %d: times %v–%v, wrote %v–%v", i, h.Start, h.End, wh.Start, wh.End)
		}
		h.Start, h.End, wh.Start, wh.End = time.Time{}, time.Time{}, time.Time{}, time.Time{}
		if h != wh {
			t.Errorf("hit %d: read %+v, wrote %+v", i, h, wh)
		}
	}
	if got[0].UserAgent != "Petrel/0.1 (test; agent7)" || !got[0].IP.IsValid() || got[0].Status != 200 {
		t.Errorf("first hit read back as %+v", got[0])
	}

	small := startWeb(t, Config{Hosts: 1, HostsPerIP: 1, PagesPerHost: 4, MaxHits: 1, FirstIP: netip.MustParseAddr("127.31.67.9")})
	sc := client(t, small, 5*time.Second)
	for range 2 {
		resp, err := sc.Get(small.Seeds()[0])
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	for deadline := time.Now().Add(2 * time.Second); small.DroppedHits() == 0 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if err := small.WriteHitLog(path); err == nil {
		t.Error("a log that dropped hits was written")
	}
}
