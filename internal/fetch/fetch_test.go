package fetch

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// rawServer is a TCP server on an explicit loopback address whose
// connections are handled by a test-supplied function.
type rawServer struct {
	ln      net.Listener
	addr    netip.AddrPort
	accepts atomic.Int32
	wg      sync.WaitGroup
}

func newRawServer(t testing.TB, ip string, handle func(c net.Conn)) *rawServer {
	t.Helper()
	ln, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	s := &rawServer{ln: ln, addr: netip.MustParseAddrPort(ln.Addr().String())}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.accepts.Add(1)
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				defer c.Close()
				handle(c)
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		s.wg.Wait()
	})
	return s
}

// url returns an http URL naming host on the server's port.
func (s *rawServer) url(host, path string) string {
	return fmt.Sprintf("http://%s:%d%s", host, s.addr.Port(), path)
}

// readRequest reads one request head (up to the blank line) from br.
func readRequest(br *bufio.Reader) ([]byte, error) {
	var buf bytes.Buffer
	for {
		line, err := br.ReadBytes('\n')
		buf.Write(line)
		if err != nil {
			return buf.Bytes(), err
		}
		if bytes.Equal(line, []byte("\r\n")) {
			return buf.Bytes(), nil
		}
	}
}

// privateOK returns fetcher options that allow loopback destinations.
func privateOK() Options {
	return Options{UserAgent: "Petrel-test/1.0", Guard: Guard{AllowPrivate: true}}
}

func TestFetchRawCaptureChunked(t *testing.T) {
	const resp = "HTTP/1.1 200 OK\r\n" +
		"x-LowerCase: first\r\n" +
		"Content-Type: text/html; charset=utf-8\r\n" +
		"X-CuStOm:   spaced  \r\n" +
		"Transfer-Encoding: chunked\r\n" +
		"\r\n" +
		"5\r\nhello\r\n" +
		"7;ext=1\r\n, world\r\n" +
		"0\r\n" +
		"X-Trailer: t\r\n" +
		"\r\n"
	gotReq := make(chan []byte, 1)
	srv := newRawServer(t, "127.41.0.1", func(c net.Conn) {
		req, err := readRequest(bufio.NewReader(c))
		gotReq <- req
		if err == nil {
			io.WriteString(c, resp)
		}
	})
	f := New(privateOK())
	defer f.CloseIdle()
	r, err := f.Fetch(context.Background(), Request{URL: srv.url("www.site.test", "/a/b?c=d"), Addr: srv.addr.Addr()})
	if err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	if string(r.RawResponse) != resp {
		t.Errorf("RawResponse differs from the bytes sent:\n got %q\nwant %q", r.RawResponse, resp)
	}
	if string(r.Body) != "hello, world" {
		t.Errorf("Body = %q, want the de-chunked entity", r.Body)
	}
	sent := <-gotReq
	if !bytes.Equal(r.RawRequest, sent) {
		t.Errorf("RawRequest differs from what the server read:\n got %q\nwant %q", r.RawRequest, sent)
	}
	wantStart := fmt.Sprintf("GET /a/b?c=d HTTP/1.1\r\nHost: www.site.test:%d\r\nUser-Agent: Petrel-test/1.0\r\n", srv.addr.Port())
	if !bytes.HasPrefix(sent, []byte(wantStart)) {
		t.Errorf("request head %q does not start with %q", sent, wantStart)
	}
	if !bytes.Contains(sent, []byte("Accept-Encoding: gzip, deflate, br\r\n")) {
		t.Errorf("request lacks Accept-Encoding: %q", sent)
	}
	if r.Status != 200 || r.Proto != "HTTP/1.1" || r.Truncated != "" || r.Addr != srv.addr.Addr() {
		t.Errorf("Status %d Proto %q Truncated %q Addr %v", r.Status, r.Proto, r.Truncated, r.Addr)
	}
	if r.Header.Get("X-Custom") != "spaced" {
		t.Errorf("header X-Custom = %q", r.Header.Get("X-Custom"))
	}
	if r.End.Before(r.Start) {
		t.Error("End before Start")
	}
	r.Release()
}

// keepAliveServer answers every request on a connection with a distinct
// Content-Length response; extra, when set, is written after the body of
// the first response (a body longer than its Content-Length).
func keepAliveServer(t *testing.T, ip string, extra string) (*rawServer, *sync.Map) {
	var sent sync.Map // "conn#req" -> response
	var conns atomic.Int32
	srv := newRawServer(t, ip, func(c net.Conn) {
		id := conns.Add(1)
		br := bufio.NewReader(c)
		for i := 0; ; i++ {
			req, err := readRequest(br)
			if err != nil {
				return
			}
			path := strings.Fields(string(req))[1]
			body := fmt.Sprintf("conn %d request %d path %s", id, i, path)
			resp := fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Length: %d\r\nX-Req: %d\r\n\r\n%s", len(body), i, body)
			sent.Store(path, resp)
			out := resp
			if i == 0 {
				out += extra
			}
			if _, err := io.WriteString(c, out); err != nil {
				return
			}
		}
	})
	return srv, &sent
}

func TestFetchKeepAliveCaptures(t *testing.T) {
	srv, sent := keepAliveServer(t, "127.41.0.2", "")
	f := New(privateOK())
	defer f.CloseIdle()
	for i := range 5 {
		path := fmt.Sprintf("/page%d", i)
		r, err := f.Fetch(context.Background(), Request{URL: srv.url("ka.test", path), Addr: srv.addr.Addr()})
		if err != nil {
			t.Fatalf("Fetch %s: %v", path, err)
		}
		want, _ := sent.Load(path)
		if string(r.RawResponse) != want.(string) {
			t.Errorf("%s: RawResponse %q, want %q", path, r.RawResponse, want)
		}
		if !bytes.HasPrefix(r.RawRequest, []byte("GET "+path+" HTTP/1.1\r\n")) || bytes.Count(r.RawRequest, []byte("GET ")) != 1 {
			t.Errorf("%s: RawRequest %q", path, r.RawRequest)
		}
		if !strings.HasPrefix(string(r.Body), "conn 1 request ") {
			t.Errorf("%s: body %q not on the first connection", path, r.Body)
		}
	}
	if n := srv.accepts.Load(); n != 1 {
		t.Errorf("%d connections for 5 sequential fetches, want 1 (keep-alive)", n)
	}
}

func TestFetchBodyLongerThanContentLength(t *testing.T) {
	srv, sent := keepAliveServer(t, "127.41.0.3", "GARBAGE AFTER THE BODY\r\n\r\n")
	f := New(privateOK())
	defer f.CloseIdle()
	for _, path := range []string{"/first", "/second"} {
		r, err := f.Fetch(context.Background(), Request{URL: srv.url("extra.test", path), Addr: srv.addr.Addr()})
		if err != nil {
			t.Fatalf("Fetch %s: %v", path, err)
		}
		want, _ := sent.Load(path)
		if string(r.RawResponse) != want.(string) {
			t.Errorf("%s: RawResponse %q, want %q (no bytes beyond the response)", path, r.RawResponse, want)
		}
	}
}

func TestFetchBodyCap(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789abcdef"), 64<<10) // 1 MiB
	var newConns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/cl" {
			w.Header().Set("Content-Length", fmt.Sprint(len(big)))
		}
		for off := 0; off < len(big); off += 32 << 10 { // chunked without Content-Length
			if _, err := w.Write(big[off : off+32<<10]); err != nil {
				return
			}
			w.(http.Flusher).Flush()
		}
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			newConns.Add(1)
		}
	}
	ln, err := net.Listen("tcp", "127.41.0.4:0")
	if err != nil {
		t.Fatal(err)
	}
	srv.Listener = ln
	srv.Start()
	defer srv.Close()
	ap := netip.MustParseAddrPort(ln.Addr().String())

	opts := privateOK()
	opts.MaxBody = 100 << 10
	f := New(opts)
	defer f.CloseIdle()
	for i, path := range []string{"/cl", "/chunked", "/cl"} {
		r, err := f.Fetch(context.Background(), Request{URL: fmt.Sprintf("http://big.test:%d%s", ap.Port(), path), Addr: ap.Addr()})
		if err != nil {
			t.Fatalf("Fetch %s: %v", path, err)
		}
		if r.Truncated != TruncatedLength || int64(len(r.Body)) != opts.MaxBody {
			t.Fatalf("%s: Truncated %q len %d, want %q and %d", path, r.Truncated, len(r.Body), TruncatedLength, opts.MaxBody)
		}
		if !bytes.Equal(r.Body, big[:opts.MaxBody]) {
			t.Errorf("%s: truncated body is not a prefix of the served body", path)
		}
		hl := headerEnd(r.RawResponse)
		if hl < 0 {
			t.Fatalf("%s: no header block in raw capture", path)
		}
		if path == "/cl" && !bytes.Equal(r.RawResponse[hl:], r.Body) {
			t.Errorf("%s: raw body part (%d bytes) differs from Body", path, len(r.RawResponse)-hl)
		}
		if path == "/chunked" && !bytes.HasPrefix(r.RawResponse[hl:], []byte("8000\r\n0123")) {
			t.Errorf("%s: raw body part lacks chunk framing: %q", path, r.RawResponse[hl:hl+16])
		}
		if len(r.RawResponse) > f.respMax {
			t.Errorf("%s: raw capture %d bytes over its bound %d", path, len(r.RawResponse), f.respMax)
		}
		// A cut body closes the connection rather than draining it.
		if n := int(newConns.Load()); n != i+1 {
			t.Errorf("after fetch %d: %d connections, want %d", i+1, n, i+1)
		}
	}
}

func TestFetchTimeouts(t *testing.T) {
	const ip = "127.41.0.5"
	never := newRawServer(t, ip, func(c net.Conn) {
		readRequest(bufio.NewReader(c))
		time.Sleep(2 * time.Second)
	})
	stall := newRawServer(t, ip, func(c net.Conn) {
		readRequest(bufio.NewReader(c))
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\npartial")
		time.Sleep(2 * time.Second)
	})
	trickle := newRawServer(t, ip, func(c net.Conn) {
		readRequest(bufio.NewReader(c))
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n")
		for range 100 {
			if _, err := io.WriteString(c, "0123456789"); err != nil {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
	cases := []struct {
		name      string
		srv       *rawServer
		opts      func(*Options)
		wantResp  bool
		wantTrunc string
		minBody   int
	}{
		{"accept-never-answer/header", never, func(o *Options) { o.HeaderTimeout = 200 * time.Millisecond }, false, "", 0},
		{"accept-never-answer/total", never, func(o *Options) { o.Timeout = 200 * time.Millisecond }, false, "", 0},
		{"headers-then-stall", stall, func(o *Options) { o.Timeout = 300 * time.Millisecond }, true, TruncatedTime, len("partial")},
		{"trickle", trickle, func(o *Options) { o.Timeout = 300 * time.Millisecond }, true, TruncatedTime, 20},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			opts := privateOK()
			c.opts(&opts)
			f := New(opts)
			defer f.CloseIdle()
			start := time.Now()
			r, err := f.Fetch(context.Background(), Request{URL: c.srv.url("slow.test", "/"), Addr: c.srv.addr.Addr()})
			if time.Since(start) > 1500*time.Millisecond {
				t.Errorf("took %v: timeout not applied", time.Since(start))
			}
			if k := Classify(err); k != ErrTimeout {
				t.Fatalf("Classify(%v) = %v, want timeout", err, k)
			}
			if (r != nil) != c.wantResp {
				t.Fatalf("partial response = %v, want %v", r != nil, c.wantResp)
			}
			if r == nil {
				return
			}
			if r.Truncated != c.wantTrunc || len(r.Body) < c.minBody || r.Status != 200 {
				t.Errorf("Truncated %q body %d bytes status %d; want %q, >= %d bytes", r.Truncated, len(r.Body), r.Status, c.wantTrunc, c.minBody)
			}
			hl := headerEnd(r.RawResponse)
			if hl < 0 || !bytes.Equal(r.RawResponse[hl:], r.Body) {
				t.Errorf("raw body part differs from Body: raw %q", r.RawResponse)
			}
		})
	}
}

func TestFetchBrokenServers(t *testing.T) {
	const ip = "127.41.0.6"
	hugeHeaders := newRawServer(t, ip, func(c net.Conn) {
		readRequest(bufio.NewReader(c))
		io.WriteString(c, "HTTP/1.1 200 OK\r\n")
		line := "X-Filler: " + strings.Repeat("x", 1000) + "\r\n"
		for range 1024 { // ~1 MiB of headers
			if _, err := io.WriteString(c, line); err != nil {
				return
			}
		}
		io.WriteString(c, "\r\n")
	})
	badStatus := newRawServer(t, ip, func(c net.Conn) {
		readRequest(bufio.NewReader(c))
		io.WriteString(c, "HTTX/9 banana\r\n\r\n")
	})
	resetMidBody := newRawServer(t, ip, func(c net.Conn) {
		readRequest(bufio.NewReader(c))
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 10000\r\n\r\n"+strings.Repeat("r", 100))
		time.Sleep(50 * time.Millisecond)
		c.(*net.TCPConn).SetLinger(0) // close with RST
	})
	eofMidBody := newRawServer(t, ip, func(c net.Conn) {
		readRequest(bufio.NewReader(c))
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 10000\r\n\r\n"+strings.Repeat("e", 100))
	})
	chunkCut := newRawServer(t, ip, func(c net.Conn) {
		readRequest(bufio.NewReader(c))
		io.WriteString(c, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10\r\n0123456789abcdef\r\n100\r\nshort")
	})
	controlInLocation := newRawServer(t, ip, func(c net.Conn) {
		readRequest(bufio.NewReader(c))
		io.WriteString(c, "HTTP/1.1 301 Moved\r\nLocation: /a\x01b\r\nContent-Length: 0\r\n\r\n")
	})
	closeNoAnswer := newRawServer(t, ip, func(c net.Conn) {
		readRequest(bufio.NewReader(c))
	})
	// A port with nothing listening: take one and close it.
	ln, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Fatal(err)
	}
	refusedAddr := netip.MustParseAddrPort(ln.Addr().String())
	ln.Close()

	cases := []struct {
		name      string
		url       string
		addr      netip.Addr
		kind      ErrorKind
		wantResp  bool
		wantTrunc string
		wantBody  int
		sentinel  error
	}{
		{"1MiB-headers", hugeHeaders.url("h.test", "/"), hugeHeaders.addr.Addr(), ErrTooLargeHeader, true, "", 0, ErrHeaderTooLarge},
		{"invalid-status-line", badStatus.url("h.test", "/"), badStatus.addr.Addr(), ErrProtocol, true, "", 0, nil},
		{"reset-mid-body", resetMidBody.url("h.test", "/"), resetMidBody.addr.Addr(), ErrReset, true, TruncatedDisconnect, 100, nil},
		{"eof-mid-body", eofMidBody.url("h.test", "/"), eofMidBody.addr.Addr(), ErrReset, true, TruncatedDisconnect, 100, nil},
		{"chunked-cut-short", chunkCut.url("h.test", "/"), chunkCut.addr.Addr(), ErrReset, true, TruncatedDisconnect, 16 + 5, nil},
		{"control-bytes-in-location", controlInLocation.url("h.test", "/"), controlInLocation.addr.Addr(), ErrProtocol, true, "", 0, nil},
		{"close-without-answer", closeNoAnswer.url("h.test", "/"), closeNoAnswer.addr.Addr(), ErrReset, false, "", 0, nil},
		{"refused", fmt.Sprintf("http://h.test:%d/", refusedAddr.Port()), refusedAddr.Addr(), ErrRefused, false, "", 0, nil},
	}
	f := New(privateOK())
	defer f.CloseIdle()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := f.Fetch(context.Background(), Request{URL: c.url, Addr: c.addr})
			if err == nil {
				t.Fatal("Fetch succeeded")
			}
			if k := Classify(err); k != c.kind {
				t.Errorf("Classify(%v) = %v, want %v", err, k, c.kind)
			}
			// The malformed heads come again on every try; the others may not.
			permanent := c.kind == ErrTooLargeHeader || c.kind == ErrProtocol
			if Permanent(err) != permanent {
				t.Errorf("Permanent(%v) = %v, want %v", err, !permanent, permanent)
			}
			if c.sentinel != nil && !errors.Is(err, c.sentinel) {
				t.Errorf("error %v does not wrap %v", err, c.sentinel)
			}
			if (r != nil) != c.wantResp {
				t.Fatalf("partial response = %v, want %v", r != nil, c.wantResp)
			}
			if r == nil {
				return
			}
			if len(r.RawRequest) == 0 || !bytes.HasPrefix(r.RawRequest, []byte("GET / HTTP/1.1\r\n")) {
				t.Errorf("RawRequest %q", r.RawRequest)
			}
			if r.Truncated != c.wantTrunc || len(r.Body) != c.wantBody {
				t.Errorf("Truncated %q body %d bytes, want %q and %d", r.Truncated, len(r.Body), c.wantTrunc, c.wantBody)
			}
			if int64(len(r.RawResponse)) > int64(f.respMax) {
				t.Errorf("raw capture of %d bytes exceeds its bound %d", len(r.RawResponse), f.respMax)
			}
		})
	}
	if !strings.Contains(fmt.Sprint(cases[0].kind), "header") {
		t.Errorf("ErrTooLargeHeader.String() = %q", cases[0].kind)
	}
}

func TestFetchGuard(t *testing.T) {
	srv := newRawServer(t, "127.41.0.7", func(c net.Conn) {
		readRequest(bufio.NewReader(c))
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
	})
	f := New(Options{}) // private addresses refused by default
	defer f.CloseIdle()
	cases := []struct {
		name string
		url  string
		addr netip.Addr
	}{
		{"loopback", srv.url("evil.test", "/"), srv.addr.Addr()},
		{"mapped-loopback", srv.url("evil.test", "/"), netip.AddrFrom16(srv.addr.Addr().As16())},
		{"literal-no-addr", srv.url(srv.addr.Addr().String(), "/"), netip.Addr{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := f.Fetch(context.Background(), Request{URL: c.url, Addr: c.addr})
			if Classify(err) != ErrForbidden || !errors.Is(err, ErrForbiddenAddress) || r != nil {
				t.Fatalf("Fetch = %v, %v; want a forbidden error and no response", r, err)
			}
		})
	}
	// The dialer itself checks the address actually dialled.
	ctx := context.WithValue(context.Background(), addrKey{}, srv.addr.Addr())
	if _, err := f.dial(ctx, "tcp", fmt.Sprintf("public.test:%d", srv.addr.Port())); !errors.Is(err, ErrForbiddenAddress) {
		t.Errorf("dial of a loopback address: %v, want ErrForbiddenAddress", err)
	}
	time.Sleep(20 * time.Millisecond)
	if n := srv.accepts.Load(); n != 0 {
		t.Errorf("%d connections reached the server, want none", n)
	}
}

func TestFetchTLS(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprintf(w, "host=%s tls=%v", r.Host, r.TLS != nil)
	}))
	ln, err := net.Listen("tcp", "127.41.0.8:0")
	if err != nil {
		t.Fatal(err)
	}
	srv.Listener = ln
	srv.StartTLS()
	defer srv.Close()
	ap := netip.MustParseAddrPort(ln.Addr().String())
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())

	opts := privateOK()
	opts.TLSConfig = &tls.Config{RootCAs: pool}
	f := New(opts)
	defer f.CloseIdle()
	// httptest's certificate is valid for example.com: the name goes to SNI
	// and verification while the connection goes to the given address.
	u := fmt.Sprintf("https://example.com:%d/x", ap.Port())
	for i := range 2 {
		r, err := f.Fetch(context.Background(), Request{URL: u, Addr: ap.Addr()})
		if err != nil {
			t.Fatalf("Fetch %d: %v", i, err)
		}
		want := fmt.Sprintf("host=example.com:%d tls=true", ap.Port())
		if string(r.Body) != want {
			t.Errorf("Body %q, want %q", r.Body, want)
		}
		if !bytes.HasPrefix(r.RawRequest, []byte("GET /x HTTP/1.1\r\nHost: example.com:")) {
			t.Errorf("RawRequest %q", r.RawRequest)
		}
		if !bytes.HasPrefix(r.RawResponse, []byte("HTTP/1.1 200 OK\r\n")) || !bytes.HasSuffix(r.RawResponse, []byte(want)) {
			t.Errorf("RawResponse %q", r.RawResponse)
		}
	}
	r, err := f.Fetch(context.Background(), Request{URL: u, Addr: ap.Addr()})
	if err != nil || r.TLS == nil || !r.TLS.Verified || r.TLS.Version != "tls/1.3" || r.TLS.Cipher == "" || r.TLS.Outcome() != "verified" {
		t.Errorf("verified connection: %v, TLS %+v", err, r.TLS)
	}
	wrong := Request{URL: fmt.Sprintf("https://wrong.test:%d/", ap.Port()), Addr: ap.Addr()}
	// strict: a name the certificate does not cover fails verification,
	// and the handshake with it.
	sopts := opts
	sopts.TLSVerify = TLSStrict
	strict := New(sopts)
	defer strict.CloseIdle()
	_, err = strict.Fetch(context.Background(), wrong)
	if k := Classify(err); k != ErrProtocol || !IsCertificateError(err) {
		t.Errorf("strict, bad certificate: Classify(%v) = %v, want protocol, a certificate error", err, k)
	}
	// record (the default): connected anyway, the error recorded.
	r, err = f.Fetch(context.Background(), wrong)
	if err != nil || r.Status != 200 || r.TLS == nil || r.TLS.Verified || !strings.Contains(r.TLS.VerifyError, "wrong.test") ||
		!strings.HasPrefix(r.TLS.Outcome(), "failed: x509: certificate is valid for") {
		t.Errorf("record, bad certificate: %v, TLS %+v", err, r.TLS)
	}
	// record without the server's root: unknown authority, recorded.
	r, err = New(privateOK()).Fetch(context.Background(), Request{URL: u, Addr: ap.Addr()})
	if err != nil || r.TLS == nil || r.TLS.Verified || !strings.Contains(r.TLS.VerifyError, "unknown authority") {
		t.Errorf("record, self-signed: %v, TLS %+v", err, r.TLS)
	}
	// off: connected, nothing checked.
	oopts := privateOK()
	oopts.TLSVerify = TLSOff
	r, err = New(oopts).Fetch(context.Background(), wrong)
	if err != nil || r.TLS == nil || r.TLS.Verified || r.TLS.VerifyError != "" || r.TLS.Outcome() != "off" {
		t.Errorf("off: %v, TLS %+v", err, r.TLS)
	}
	// A CA file (PEM) makes the self-signed certificate trusted, strictly.
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	roots, err := LoadRoots(caFile)
	if err != nil {
		t.Fatal(err)
	}
	copts := privateOK()
	copts.TLSVerify, copts.TLSConfig = TLSStrict, &tls.Config{RootCAs: roots}
	if r, err = New(copts).Fetch(context.Background(), Request{URL: u, Addr: ap.Addr()}); err != nil || !r.TLS.Verified {
		t.Errorf("strict with --ca-file: %v", err)
	}
	if _, err := LoadRoots(filepath.Join(t.TempDir(), "none.pem")); err == nil {
		t.Error("LoadRoots of a missing file: no error")
	}
	if err := os.WriteFile(caFile, []byte("not pem"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadRoots(caFile); err == nil || !strings.Contains(err.Error(), "no PEM certificate") {
		t.Errorf("LoadRoots of a file without PEM: %v", err)
	}
	for _, s := range []string{"strict", "record", "off"} {
		if v, err := ParseTLSVerify(s); err != nil || v.String() != s {
			t.Errorf("ParseTLSVerify(%q) = %v, %v", s, v, err)
		}
	}
	if _, err := ParseTLSVerify("lax"); err == nil {
		t.Error("ParseTLSVerify(lax): no error")
	}
	if r, _ := f.Fetch(context.Background(), Request{URL: "http://" + ap.String() + "/"}); r != nil && r.TLS != nil {
		t.Error("plain http response with TLS state")
	}
}

func TestFetchBadRequests(t *testing.T) {
	f := New(privateOK())
	cases := []Request{
		{URL: "ftp://x.test/", Addr: netip.MustParseAddr("127.41.0.9")},
		{URL: "/relative", Addr: netip.MustParseAddr("127.41.0.9")},
		{URL: "http://name.test/"}, // no address
		{URL: "http://x.test/%zz", Addr: netip.MustParseAddr("127.41.0.9")},
	}
	for _, req := range cases {
		if r, err := f.Fetch(context.Background(), req); err == nil || r != nil || Classify(err) != ErrOther {
			t.Errorf("Fetch(%+v) = %v, %v (%v); want an ErrOther failure", req, r, err, Classify(err))
		}
	}
}

func TestClassify(t *testing.T) {
	cases := []struct {
		err  error
		want ErrorKind
	}{
		{nil, ErrNone},
		{fmt.Errorf("x: %w", ErrNoSuchHost), ErrDNS},
		{fmt.Errorf("x: %w", ErrSpecialUseName), ErrDNS},
		{&net.DNSError{Err: "no such host", IsNotFound: true}, ErrDNS},
		{context.DeadlineExceeded, ErrTimeout},
		{fmt.Errorf("x: %w", ErrForbiddenAddress), ErrForbidden},
		{io.ErrUnexpectedEOF, ErrReset},
		{context.Canceled, ErrOther},
		{errors.New("something"), ErrOther},
	}
	for _, c := range cases {
		if got := Classify(c.err); got != c.want {
			t.Errorf("Classify(%v) = %v, want %v", c.err, got, c.want)
		}
	}
	for k := ErrNone; k <= ErrOther; k++ {
		if s := k.String(); s == "" || s == "unknown" {
			t.Errorf("ErrorKind(%d).String() = %q", k, s)
		}
	}
}

func TestHeaderEnd(t *testing.T) {
	cases := []struct {
		raw  string
		want int
	}{
		{"HTTP/1.1 200 OK\r\nA: b\r\n\r\nbody", 25},
		{"HTTP/1.1 200 OK\nA: b\n\nbody", 22},
		{"HTTP/1.1 103 Early Hints\r\nLink: x\r\n\r\nHTTP/1.1 200 OK\r\n\r\nbody", 56},
		{"HTTP/1.1 200 OK\r\nA: b\r\n", -1},
	}
	for _, c := range cases {
		if got := headerEnd([]byte(c.raw)); got != c.want {
			t.Errorf("headerEnd(%q) = %d, want %d", c.raw, got, c.want)
		}
	}
}

func BenchmarkFetchKeepAlive20KiB(b *testing.B) {
	page := bytes.Repeat([]byte("<p>petrel bench</p>\n"), 1024) // 20 KiB
	resp := append([]byte(fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\n\r\n", len(page))), page...)
	srv := newRawServer(b, "127.41.0.10", func(c net.Conn) {
		br := bufio.NewReader(c)
		for {
			if _, err := readRequest(br); err != nil {
				return
			}
			if _, err := c.Write(resp); err != nil {
				return
			}
		}
	})
	f := New(privateOK())
	defer f.CloseIdle()
	req := Request{URL: srv.url("bench.test", "/page"), Addr: srv.addr.Addr()}
	b.ReportAllocs()
	b.SetBytes(int64(len(resp)))
	for b.Loop() {
		r, err := f.Fetch(context.Background(), req)
		if err != nil {
			b.Fatal(err)
		}
		if len(r.Body) != len(page) {
			b.Fatalf("body %d bytes", len(r.Body))
		}
		r.Release()
	}
	if n := srv.accepts.Load(); n != 1 {
		b.Errorf("%d connections, want 1", n)
	}
}

// TestUnreachable tells a server that cannot be reached (nothing listens:
// the connection is refused) from one reached that fails the request (it
// never answers: a header timeout; it closes at once: a reset): only the
// first is Unreachable.
func TestUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.41.0.21:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := netip.MustParseAddrPort(ln.Addr().String())
	ln.Close()
	hold := make(chan struct{})
	defer close(hold)
	silent := newRawServer(t, "127.41.0.22", func(c net.Conn) { <-hold })
	hangUp := newRawServer(t, "127.41.0.23", func(c net.Conn) {})
	opts := privateOK()
	opts.HeaderTimeout = 200 * time.Millisecond
	f := New(opts)
	defer f.CloseIdle()
	for _, c := range []struct {
		name string
		addr netip.AddrPort
		want bool
	}{
		{"refused", closed, true},
		{"never answers", silent.addr, false},
		{"hangs up", hangUp.addr, false},
	} {
		_, err := f.Fetch(context.Background(), Request{URL: fmt.Sprintf("http://down.test:%d/", c.addr.Port()), Addr: c.addr.Addr()})
		if err == nil {
			t.Fatalf("%s: no error", c.name)
		}
		if got := Unreachable(err); got != c.want {
			t.Errorf("%s: Unreachable(%v) = %v, want %v", c.name, err, got, c.want)
		}
	}
}
