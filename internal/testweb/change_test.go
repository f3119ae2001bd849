package testweb

import (
	"context"
	"io"
	"net/http"
	"net/netip"
	"testing"
	"time"
)

// TestChangingWeb checks the changing web: versions grow with time at the
// page's own rate and are a pure function of (page, time); hosts answer
// conditional requests as their kind of validators says (a 304 while the
// page is unchanged, a 200 with the new version once it changed, a stale
// host 304 although it changed, a host without validators always 200),
// and the request log records the version each request got.
func TestChangingWeb(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const day = 20 * time.Second
	w, err := Start(ctx, Config{Hosts: 40, PagesPerHost: 10, Seed: 3, ChangeDay: day, FirstIP: netip.MustParseAddr("127.31.40.1")})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	c := client(t, w, 5*time.Second)

	// The mix: periods spread over the classes, versions monotone.
	kinds := map[Validators]string{}
	var fast string // a page changing about every fast minute or hour
	for _, u := range w.Expected() {
		p := w.ChangePeriod(u)
		if p == 0 {
			continue
		}
		s, _ := w.lookup(u)
		k := w.HostValidators(s.name)
		if p < day/20 && (k == ValidatorsBoth || k == ValidatorsStale || k == ValidatorsNone) && kinds[k] == "" {
			kinds[k] = u
		}
		if p < day/20 && fast == "" {
			fast = u
		}
		v1, _ := w.VersionAt(u, w.born.Add(3*p))
		v2, _ := w.VersionAt(u, w.born.Add(10*p))
		if v1 < 2 || v1 > 3 || v2 < 9 || v2 > 10 {
			t.Errorf("%s (period %v): versions %d at 3 periods, %d at 10", u, p, v1, v2)
		}
	}
	for _, k := range []Validators{ValidatorsBoth, ValidatorsStale, ValidatorsNone} {
		if kinds[k] == "" {
			t.Fatalf("no fast page on a host whose validators are %v", k)
		}
	}
	made := 0 // requests made
	get := func(u string, hdr ...string) *http.Response {
		made++
		req, _ := http.NewRequest("GET", u, nil)
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	waitChange := func(u string) {
		v0, _ := w.VersionAt(u, time.Now())
		for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
			if v, _ := w.VersionAt(u, time.Now()); v != v0 {
				return
			}
		}
		t.Fatalf("%s did not change in 10 s", u)
	}
	both := kinds[ValidatorsBoth]
	r := get(both)
	et, lm := r.Header.Get("ETag"), r.Header.Get("Last-Modified")
	if r.StatusCode != 200 || et == "" || lm == "" {
		t.Fatalf("%s: %d, ETag %q, Last-Modified %q", both, r.StatusCode, et, lm)
	}
	if r2 := get(both, "If-None-Match", et); r2.StatusCode != http.StatusNotModified {
		v, _ := w.VersionAt(both, time.Now())
		t.Logf("changed in between (now version %d): %d", v, r2.StatusCode)
	}
	waitChange(both)
	if r3 := get(both, "If-None-Match", et); r3.StatusCode != 200 || r3.Header.Get("ETag") == et {
		t.Errorf("%s changed: conditional GET got %d, ETag %q (was %q)", both, r3.StatusCode, r3.Header.Get("ETag"), et)
	}
	stale := kinds[ValidatorsStale]
	et = get(stale).Header.Get("ETag")
	waitChange(stale)
	if r := get(stale, "If-None-Match", et); r.StatusCode != http.StatusNotModified {
		t.Errorf("stale host %s: %d after a change, want 304 (its validators never change)", stale, r.StatusCode)
	}
	none := kinds[ValidatorsNone]
	if r := get(none, "If-Modified-Since", time.Now().Add(time.Hour).UTC().Format(http.TimeFormat)); r.StatusCode != 200 ||
		r.Header.Get("ETag") != "" || r.Header.Get("Last-Modified") != "" {
		t.Errorf("host without validators: %d, ETag %q, Last-Modified %q", r.StatusCode, r.Header.Get("ETag"), r.Header.Get("Last-Modified"))
	}

	// The log: each request of a changing page with the version live at
	// its start; the body says the same version. A request is logged once
	// its handler returns, which may be after the client read the answer.
	hits := w.Hits()
	for end := time.Now().Add(5 * time.Second); len(hits) < made && time.Now().Before(end); hits = w.Hits() {
		time.Sleep(10 * time.Millisecond)
	}
	n := 0
	for _, h := range hits {
		u := w.byName[h.Host].origin + h.Path
		v, ok := w.VersionAt(u, h.Start)
		if !ok {
			continue
		}
		n++
		if h.Version != v {
			t.Errorf("%s at %v: logged version %d, live %d", u, h.Start, h.Version, v)
		}
	}
	if n < 6 {
		t.Errorf("%d requests of changing pages in the log", n)
	}
}

// TestFreshness: a copy captured at version 0 and never refreshed is fresh
// until the page's first change and then stale with a growing age: over a
// window centred on that change, freshness 1/2 and mean age a quarter of
// the window's half; a 200 of the new version at the change makes it
// fresh throughout.
func TestFreshness(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := Start(ctx, Config{Hosts: 4, PagesPerHost: 5, Seed: 3, ChangeDay: time.Hour, FirstIP: netip.MustParseAddr("127.31.41.1")})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var s *site
	var p, key string
	for _, e := range w.Expected() { // a page whose second change comes after the window
		if w.ChangePeriod(e) > 0 {
			s, p = w.lookup(e)
			key = s.name + " " + p
			if c0 := w.changeTime(key, 0); w.changeTime(key, 1).After(c0.Add(c0.Sub(w.born))) {
				break
			}
		}
	}
	at := w.born.Add(time.Millisecond)
	first := Hit{Host: s.name, Path: p, Status: 200, Start: at, End: at}
	from := at.Add(time.Millisecond)
	c0 := w.changeTime(key, 0)
	half := c0.Sub(from)
	to := c0.Add(half)
	f := w.Freshness([]Hit{first}, from, to)
	if f.Pages != 1 || f.Freshness < 0.499 || f.Freshness > 0.501 || (f.Age-half/4).Abs() > time.Millisecond {
		t.Errorf("never refreshed: %+v, want freshness 0.5, age %v", f, half/4)
	}
	again := Hit{Host: s.name, Path: p, Status: 200, Start: c0, End: c0, Version: 1}
	if f := w.Freshness([]Hit{first, again}, from, to); f.Freshness < 0.999 || f.Age != 0 || f.Revisits != 1 {
		t.Errorf("refreshed at the change: %+v", f)
	}
}
