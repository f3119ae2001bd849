package agent

import (
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// TestHTTP2Crawl crawls a loopback https server offering h2 by ALPN: with
// --http2 (the default) robots.txt and both pages go over HTTP/2 on one
// connection, counted as one HTTP/2 connection and three streams, and
// their request and response records carry WARC-Protocol h2 before the
// TLS version; with --http2=false the server sees HTTP/1.1 only.
func TestHTTP2Crawl(t *testing.T) {
	var h2reqs, reqs atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reqs.Add(1)
		if r.ProtoMajor == 2 {
			h2reqs.Add(1)
		}
		twoPages("h2")(w, r)
	}))
	ln, err := net.Listen("tcp", "127.91.2.3:0")
	if err != nil {
		t.Fatal(err)
	}
	srv.Listener, srv.EnableHTTP2 = ln, true
	srv.StartTLS()
	defer srv.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	dir := t.TempDir()
	hosts := filepath.Join(dir, "hosts")
	ca := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(hosts, []byte("127.91.2.3 example.com\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	seed := fmt.Sprintf("https://example.com:%d/", port)
	a := smallCrawl(t, filepath.Join(dir, "h2"), hosts, seed, func(cfg *Config) { cfg.Fetch.CAFile = ca })
	warc := warcText(t, filepath.Join(dir, "h2", "warc"))
	st := a.stats
	if st.Fetched.Load() != 2 || st.H2Conns.Load() != 1 || st.H2Streams.Load() != 3 || st.ConnsOpened.Load() != 1 || h2reqs.Load() != 3 {
		t.Errorf("--http2: fetched %d, HTTP/2 connections %d, streams %d, connections opened %d, server's HTTP/2 requests %d; want 2, 1, 3, 1, 3",
			st.Fetched.Load(), st.H2Conns.Load(), st.H2Streams.Load(), st.ConnsOpened.Load(), h2reqs.Load())
	}
	if n := strings.Count(warc, "WARC-Protocol: h2\r\nWARC-Protocol: tls/1.3\r\n"); n != 6 {
		t.Errorf("--http2: %d records with WARC-Protocol h2 then tls/1.3, want 6 (3 requests, 3 responses)", n)
	}
	if n := strings.Count(warc, "\r\n\r\nHTTP/1.1 200 \r\n"); n != 2 {
		t.Errorf("--http2: %d responses stored as HTTP/1.1 200 without a reason phrase, want 2", n)
	}

	reqs.Store(0)
	h2reqs.Store(0)
	a = smallCrawl(t, filepath.Join(dir, "h1"), hosts, seed, func(cfg *Config) { cfg.Fetch.CAFile, cfg.Fetch.HTTP2 = ca, false })
	warc = warcText(t, filepath.Join(dir, "h1", "warc"))
	if a.stats.Fetched.Load() != 2 || reqs.Load() != 3 || h2reqs.Load() != 0 || a.stats.H2Streams.Load() != 0 || strings.Contains(warc, "WARC-Protocol: h2") {
		t.Errorf("--http2=false: fetched %d, server's requests %d (HTTP/2 %d), streams counted %d; want 2, 3, 0, 0",
			a.stats.Fetched.Load(), reqs.Load(), h2reqs.Load(), a.stats.H2Streams.Load())
	}
}
