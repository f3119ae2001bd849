package fetch

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// h2Server is an httptest TLS server on ip offering "h2" by ALPN, counting
// its connections and the requests that came over HTTP/2.
func h2Server(t *testing.T, ip string, h http.HandlerFunc) (*httptest.Server, *atomic.Int32, *atomic.Int32) {
	t.Helper()
	var conns, h2reqs atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor == 2 {
			h2reqs.Add(1)
		}
		h(w, r)
	}))
	ln, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Fatal(err)
	}
	srv.Listener = ln
	srv.EnableHTTP2 = true
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv, &conns, &h2reqs
}

// readRaw reads raw back as an HTTP/1.1 response, as a WARC reader does.
func readRaw(t *testing.T, raw []byte) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(raw)), nil)
	if err != nil {
		t.Fatalf("the raw response does not read as HTTP/1.1: %v\n%q", err, raw)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("the raw response's body does not read: %v", err)
	}
	return resp, body
}

// TestFetchHTTP2: a server offering h2 by ALPN is fetched over HTTP/2 on
// one connection kept for the requests that follow; the request and the
// response are captured in HTTP/1.1 form, the response's body as received
// (content-encoding kept) with a Content-Length stating its length (the
// server's kept as X-Orig-Content-Length when it differs); without
// Options.HTTP2 the same server is fetched over HTTP/1.1.
func TestFetchHTTP2(t *testing.T) {
	page := strings.Repeat("<p>h2 page</p>\n", 200)
	srv, conns, h2reqs := h2Server(t, "127.41.0.9", func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/streamed": // no Content-Length: DATA frames until the end of the stream
			w.Header().Set("Content-Encoding", "gzip")
			io.WriteString(w, "not really gzip, ")
			w.(http.Flusher).Flush()
			io.WriteString(w, "kept as sent")
		case "/slow":
			time.Sleep(400 * time.Millisecond)
		default:
			w.Header().Set("Content-Type", "text/html")
			w.Header().Set("Content-Length", strconv.Itoa(len(page)))
			io.WriteString(w, page)
		}
	})
	ap := netip.MustParseAddrPort(srv.Listener.Addr().String())
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	opts := privateOK()
	opts.TLSConfig, opts.HTTP2, opts.HeaderTimeout = &tls.Config{RootCAs: pool}, true, 200*time.Millisecond
	f := New(opts)
	defer f.CloseIdle()
	base := fmt.Sprintf("https://example.com:%d", ap.Port())
	get := func(path string) (*Response, error) {
		return f.Fetch(context.Background(), Request{URL: base + path, Addr: ap.Addr()})
	}

	for i := range 3 {
		r, err := get("/page")
		if err != nil {
			t.Fatalf("Fetch %d: %v", i, err)
		}
		if r.Proto != Proto2 || r.Reused != (i > 0) || r.TLS == nil || !r.TLS.Verified || r.Addr != ap.Addr() {
			t.Errorf("request %d: proto %s, reused %v, TLS %+v, addr %v; want HTTP/2, reused after the first, verified", i, r.Proto, r.Reused, r.TLS, r.Addr)
		}
		want := fmt.Sprintf("GET /page HTTP/1.1\r\nHost: example.com:%d\r\nAccept: ", ap.Port())
		if !bytes.HasPrefix(r.RawRequest, []byte(want)) || !bytes.HasSuffix(r.RawRequest, []byte("\r\n\r\n")) {
			t.Errorf("RawRequest %q, want it to begin %q", r.RawRequest, want)
		}
		if !bytes.HasPrefix(r.RawResponse, []byte("HTTP/1.1 200 \r\n")) {
			t.Errorf("RawResponse begins %q, want an HTTP/1.1 status line without a reason phrase", r.RawResponse[:min(40, len(r.RawResponse))])
		}
		hr, body := readRaw(t, r.RawResponse)
		if hr.StatusCode != 200 || hr.ContentLength != int64(len(page)) || string(body) != page || string(r.Body) != page ||
			hr.Header.Get(OrigContentLength) != "" || hr.Header.Get("Content-Type") != "text/html" {
			t.Errorf("request %d: the stored response reads back as %d, length %d, %d bytes, header %v", i, hr.StatusCode, hr.ContentLength, len(body), hr.Header)
		}
		r.Release()
	}
	if c, n := conns.Load(), h2reqs.Load(); c != 1 || n != 3 {
		t.Errorf("the server saw %d connections and %d HTTP/2 requests, want 1 and 3", c, n)
	}

	r, err := get("/streamed")
	if err != nil {
		t.Fatal(err)
	}
	hr, body := readRaw(t, r.RawResponse)
	if string(body) != "not really gzip, kept as sent" || hr.Header.Get("Content-Encoding") != "gzip" || hr.ContentLength != int64(len(body)) {
		t.Errorf("streamed: stored %q, header %v; want the body as sent with its Content-Length", body, hr.Header)
	}

	topts := opts
	topts.MaxBody = 1000
	cut, err := New(topts).Fetch(context.Background(), Request{URL: base + "/page", Addr: ap.Addr()})
	if err != nil || cut.Truncated != TruncatedLength || len(cut.Body) != 1000 {
		t.Fatalf("a body over MaxBody: %v, truncated %q, %d bytes", err, cut.Truncated, len(cut.Body))
	}
	hr, body = readRaw(t, cut.RawResponse)
	if len(body) != 1000 || hr.ContentLength != 1000 || hr.Header.Get(OrigContentLength) != strconv.Itoa(len(page)) {
		t.Errorf("truncated: stored %d bytes, header %v; want 1000 with the server's length kept", len(body), hr.Header)
	}

	if _, err := get("/slow"); Classify(err) != ErrTimeout {
		t.Errorf("headers later than HeaderTimeout: %v, want a timeout", err)
	}

	f.CloseIdle()
	r, err = get("/page")
	if err != nil || r.Reused || r.Proto != Proto2 || !r.TLS.Resumed {
		t.Errorf("after CloseIdle: %v, reused %v, proto %s, TLS %+v; want a new HTTP/2 connection resuming TLS", err, r.Reused, r.Proto, r.TLS)
	}

	before := h2reqs.Load()
	opts.HTTP2 = false
	h1 := New(opts)
	defer h1.CloseIdle()
	r, err = h1.Fetch(context.Background(), Request{URL: base + "/page", Addr: ap.Addr()})
	if err != nil || r.Proto != "HTTP/1.1" || !bytes.HasPrefix(r.RawResponse, []byte("HTTP/1.1 200 OK\r\n")) || h2reqs.Load() != before {
		t.Errorf("without HTTP2: %v, proto %s; want HTTP/1.1 only", err, r.Proto)
	}
}

// TestH2PoolBound: the pool keeps at most its bound of idle connections,
// closing the least recently used.
func TestH2PoolBound(t *testing.T) {
	srv, conns, _ := h2Server(t, "127.41.0.10", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	ap := netip.MustParseAddrPort(srv.Listener.Addr().String())
	opts := privateOK()
	opts.HTTP2, opts.MaxIdleConns, opts.TLSVerify = true, 2, TLSOff
	f := New(opts)
	defer f.CloseIdle()
	for _, h := range []string{"a.test", "b.test", "c.test", "a.test"} {
		if _, err := f.Fetch(context.Background(), Request{URL: fmt.Sprintf("https://%s:%d/", h, ap.Port()), Addr: ap.Addr()}); err != nil {
			t.Fatal(err)
		}
	}
	f.h2.mu.Lock()
	n := len(f.h2.conns)
	f.h2.mu.Unlock()
	// a, b, c each dialled; c's evicted a, so a is dialled again.
	if n != 2 || conns.Load() != 4 {
		t.Errorf("%d connections kept, %d dialled; want 2 kept, 4 dialled", n, conns.Load())
	}
}
