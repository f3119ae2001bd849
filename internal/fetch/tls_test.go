package fetch

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/petrel-crawler/petrel/internal/testweb"
)

// realWebHTTPS returns, for each TLS version in want, the URL of a
// robots.txt of the real-shaped web w served over that version by a host
// that answers at once, with its address.
func realWebHTTPS(t *testing.T, w *testweb.GenWeb, f *Fetcher, want ...string) map[string]Request {
	t.Helper()
	g := w.Gen()
	found := map[string]Request{}
	for h := 0; h < g.Config().Hosts && len(found) < len(want); h++ {
		if !strings.HasPrefix(g.Origin(h), "https://") {
			continue
		}
		u, _ := url.Parse(g.Origin(h))
		addr, err := g.Lookup(u.Hostname())
		if err != nil {
			t.Fatal(err)
		}
		req := Request{URL: g.Origin(h) + "/robots.txt", Addr: addr, Timeout: 2 * time.Second}
		resp, err := f.Fetch(t.Context(), req)
		if err != nil || resp.Status != 200 || resp.TLS == nil || resp.End.Sub(resp.Start) > time.Second {
			continue // a slow, failing or down host
		}
		if _, ok := found[resp.TLS.Version]; !ok && strings.Contains(strings.Join(want, " "), resp.TLS.Version) {
			found[resp.TLS.Version] = req
		}
		resp.Release()
	}
	if len(found) < len(want) {
		t.Fatalf("the web has no fast HTTPS host for each of %v (found %v)", want, found)
	}
	return found
}

// TestTLSResumption: against the HTTPS hosts of a real-shaped web, a
// request on a kept-alive connection reuses it, and the next connection
// to the host (after the idle ones closed) resumes its TLS session from
// the ticket the first handshake left, under TLS 1.3 and 1.2 alike, the
// certificate still verified.
func TestTLSResumption(t *testing.T) {
	w, err := testweb.StartGen(t.Context(), testweb.GenConfig{Shape: testweb.ShapeReal, Hosts: 200, PagesPerHost: 4, Seed: 5,
		FirstIP: netip.MustParseAddr("127.91.0.1")}, testweb.GenServeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(w.CAPEM()) {
		t.Fatal("the web's CA holds no certificate")
	}
	// Finding the hosts fills the session cache of this fetcher: each test
	// below uses a fresh one.
	finder := New(Options{Guard: Guard{AllowPrivate: true}, TLSConfig: &tls.Config{RootCAs: roots}})
	defer finder.CloseIdle()
	hosts := realWebHTTPS(t, w, finder, "tls/1.3", "tls/1.2")
	for version, req := range hosts {
		t.Run(version, func(t *testing.T) {
			f := New(Options{Guard: Guard{AllowPrivate: true}, TLSConfig: &tls.Config{RootCAs: roots}, TLSSessions: 16})
			defer f.CloseIdle()
			fetch := func(what string) *Response {
				t.Helper()
				resp, err := f.Fetch(context.Background(), req)
				if err != nil || resp.Status != 200 || resp.TLS == nil {
					t.Fatalf("%s: %s: %v", what, req.URL, err)
				}
				if !resp.TLS.Verified || resp.TLS.Version != version {
					t.Errorf("%s: TLS %+v, want %s verified", what, resp.TLS, version)
				}
				return resp
			}
			if r := fetch("first"); r.Reused || r.TLS.Resumed {
				t.Errorf("first request: reused %v, resumed %v; want a new connection, a full handshake", r.Reused, r.TLS.Resumed)
			}
			if r := fetch("second"); !r.Reused {
				t.Errorf("second request: a new connection, want the kept-alive one")
			}
			f.CloseIdle()
			if r := fetch("after the idle connection closed"); r.Reused || !r.TLS.Resumed {
				t.Errorf("third request: reused %v, resumed %v; want a new connection resuming the session", r.Reused, r.TLS.Resumed)
			}
		})
	}
}
