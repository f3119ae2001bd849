package fetch

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/netip"
	"net/url"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// Defaults for [Options] fields left zero.
const (
	DefaultTimeout        = 30 * time.Second
	DefaultConnectTimeout = 10 * time.Second
	DefaultHeaderTimeout  = 15 * time.Second
	DefaultMaxBody        = 8 << 20
	DefaultMaxHeaderBytes = 256 << 10

	// DefaultMaxIdleConns bounds the idle keep-alive connections of a
	// Fetcher, least recently used dropped first, when Options.MaxIdleConns
	// is not set. A Fetcher holds at most one connection per request in
	// flight plus MaxIdleConns. A polite crawl revisits a host only after
	// its delay while it talks to many others, so the pool must hold about
	// as many connections as requests made within one host delay for a
	// connection to be reused: the agent's --max-idle-conns defaults to
	// 2048 (BENCHMARKS.md has what a new connection per request costs).
	DefaultMaxIdleConns = 32

	// DefaultTLSSessions bounds the TLS client sessions a Fetcher keeps
	// for resumption, one per host name, least recently used dropped
	// first, when Options.TLSSessions is not set. A session holds the
	// server's certificate chain, a few KiB.
	DefaultTLSSessions    = 4096
	DefaultAcceptEncoding = "gzip, deflate, br"
	DefaultAccept         = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
)

// Truncation reasons, the values of Response.Truncated (as in WARC-Truncated).
const (
	TruncatedLength     = "length"     // the body exceeded Options.MaxBody
	TruncatedTime       = "time"       // the total timeout expired while reading the body
	TruncatedDisconnect = "disconnect" // the connection failed while reading the body
)

const maxRawRequest = 64 << 10

// Options configures a [Fetcher]. Zero fields take the defaults given in
// their comments.
type Options struct {
	UserAgent           string        // sent as User-Agent
	Timeout             time.Duration // whole request including the body (default 30s)
	ConnectTimeout      time.Duration // TCP connect, and TLS handshake for https (default 10s)
	HeaderTimeout       time.Duration // from the request written to the response headers (default 15s)
	MaxBody             int64         // body cap (default 8 MiB); beyond it the body is cut and Truncated = "length"
	MaxHeaderBytes      int64         // response header cap (default 256 KiB); more is an error wrapping ErrHeaderTooLarge
	Guard               Guard         // checked on every address dialled
	MaxIdleConnsPerHost int           // keep-alive pool bound per host (default 2)
	MaxIdleConns        int           // keep-alive pool bound overall (default DefaultMaxIdleConns)
	AcceptEncoding      string        // sent as Accept-Encoding (default "gzip, deflate, br", all of which DecodeBody undoes); "identity" asks for none

	// Additions beyond the original contract.

	Accept          string        // sent as Accept (default DefaultAccept)
	IdleConnTimeout time.Duration // how long an idle keep-alive connection is kept (default 60s)
	// TLSSessions bounds the client sessions (tickets) kept to resume TLS
	// with a host on its next connection (default DefaultTLSSessions). A
	// TLSConfig with its own ClientSessionCache keeps that one instead.
	TLSSessions int
	TLSConfig   *tls.Config // base TLS configuration (cloned; ServerName is set per connection); nil means the system roots
	TLSVerify   TLSVerify   // what becomes of a certificate that does not verify (default TLSRecord: connect, record it)
	// HTTP2 offers "h2" besides "http/1.1" by ALPN on https connections;
	// a server that chooses it is spoken to over HTTP/2, one connection
	// per host name and port kept for the requests that follow, at most
	// MaxIdleConns of them idle (zero: HTTP/1.1 only).
	HTTP2  bool
	Logger *slog.Logger // debug logging of failures; nil means none
}

// A Request asks for one GET of one URL.
type Request struct {
	URL    string     // absolute normalised URL; its host goes into Host, SNI and certificate checks
	Addr   netip.Addr // the address to dial (chosen by the DNS stage); may be zero only if the URL's host is an IP literal
	Robots bool       // it is a robots.txt fetch (for stats and logging only)
	// Timeout and MaxBody, when positive, replace Options.Timeout and
	// Options.MaxBody for this request (settings changed while a crawl
	// runs).
	Timeout time.Duration
	MaxBody int64
	// IfNoneMatch and IfModifiedSince, when set, are sent as the request's
	// If-None-Match and If-Modified-Since (a conditional GET of a revisit:
	// the ETag and Last-Modified of the last capture).
	IfNoneMatch, IfModifiedSince string
}

// A Response is what was exchanged for one Request.
type Response struct {
	URL         string
	Addr        netip.Addr // the address of the connection actually used
	Status      int        // 0 if no status line was parsed
	Proto       string     // "HTTP/1.1", or Proto2 over HTTP/2
	Header      http.Header
	Body        []byte    // entity body as received: transfer-coding removed, content-encoding KEPT; at most MaxBody bytes
	Truncated   string    // "" | "length" | "time" | "disconnect" (cut short: body incomplete)
	RawRequest  []byte    // the request exactly as written on the wire (request line + headers); over HTTP/2 in HTTP/1.1 form (see package doc)
	RawResponse []byte    // the response exactly as read from the wire: status line, headers, body bytes as transferred (chunk framing kept), up to the cap; over HTTP/2 in HTTP/1.1 form
	Start, End  time.Time // request start; end of the response (last byte read or failure)
	TLS         *TLSState // for https: version, cipher suite, certificate outcome, resumption; nil for http
	// Reused reports that the request went on a keep-alive connection
	// that had carried an earlier response (false: a connection dialled
	// for it, whose TLS handshake, if any, TLS describes).
	Reused bool

	f    *Fetcher
	cp   *capture
	body *[]byte
}

// Release returns the response's buffers to the Fetcher for reuse. The
// Response and every slice taken from it must not be used afterwards.
// Calling Release is optional; it saves allocations.
func (r *Response) Release() {
	if r == nil || r.f == nil {
		return
	}
	if r.cp != nil {
		r.f.captures.put(r.cp)
	}
	if r.body != nil && cap(*r.body) <= 1<<20 {
		*r.body = (*r.body)[:0]
		r.f.bodies.Put(r.body)
	}
	*r = Response{}
}

// A Fetcher performs single GET requests, over HTTP/1.1 or (with
// Options.HTTP2, to a server that chooses it) HTTP/2, with limits and raw
// capture. It never follows redirects and never retries a request that
// reached the server. A Fetcher is safe for concurrent use.
type Fetcher struct {
	opts     Options
	tr       *http.Transport
	dialer   net.Dialer
	log      *slog.Logger
	captures capturePool
	bodies   sync.Pool // of *[]byte
	decoders decoders  // for DecodeBody of its responses
	respMax  int       // raw capture bound of a response within Options.MaxBody
	sessions tls.ClientSessionCache
	h2       *h2Pool // nil unless Options.HTTP2
}

type addrKey struct{}

// New returns a Fetcher configured by opts.
func New(opts Options) *Fetcher {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.ConnectTimeout <= 0 {
		opts.ConnectTimeout = DefaultConnectTimeout
	}
	if opts.HeaderTimeout <= 0 {
		opts.HeaderTimeout = DefaultHeaderTimeout
	}
	if opts.MaxBody <= 0 {
		opts.MaxBody = DefaultMaxBody
	}
	if opts.MaxHeaderBytes <= 0 {
		opts.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	if opts.MaxIdleConnsPerHost <= 0 {
		opts.MaxIdleConnsPerHost = 2
	}
	if opts.MaxIdleConns <= 0 {
		opts.MaxIdleConns = DefaultMaxIdleConns
	}
	if opts.AcceptEncoding == "" {
		opts.AcceptEncoding = DefaultAcceptEncoding
	}
	if opts.Accept == "" {
		opts.Accept = DefaultAccept
	}
	if opts.IdleConnTimeout <= 0 {
		opts.IdleConnTimeout = 60 * time.Second
	}
	if opts.TLSSessions <= 0 {
		opts.TLSSessions = DefaultTLSSessions
	}
	f := &Fetcher{opts: opts, log: opts.Logger, sessions: tls.NewLRUClientSessionCache(opts.TLSSessions)}
	if opts.HTTP2 {
		f.h2 = newH2Pool(opts)
	}
	if f.log == nil {
		f.log = slog.New(slog.DiscardHandler)
	}
	// Raw capture bound: headers, body, and slack for chunk framing.
	f.respMax = captureBound(opts.MaxHeaderBytes, opts.MaxBody)
	guard := opts.Guard
	f.dialer = net.Dialer{
		Timeout:   opts.ConnectTimeout,
		KeepAlive: 30 * time.Second,
		Control: func(network, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("fetch: dial %s: %w", address, err)
			}
			return guard.Check(ap.Addr())
		},
	}
	f.tr = &http.Transport{
		Proxy:                  nil,
		DialContext:            f.dial,
		DialTLSContext:         f.dialTLS,
		DisableCompression:     true,
		ForceAttemptHTTP2:      false,
		TLSNextProto:           map[string]func(string, *tls.Conn) http.RoundTripper{},
		MaxIdleConns:           opts.MaxIdleConns,
		MaxIdleConnsPerHost:    opts.MaxIdleConnsPerHost,
		IdleConnTimeout:        opts.IdleConnTimeout,
		ResponseHeaderTimeout:  opts.HeaderTimeout,
		MaxResponseHeaderBytes: opts.MaxHeaderBytes,
		// A page is read in a few system calls rather than one per 4 KiB.
		ReadBufferSize: 32 << 10,
	}
	return f
}

// CloseIdle closes the idle keep-alive connections, HTTP/2 ones included.
// Connections in use are not affected (an HTTP/2 one in use is no longer
// reused, and closes when its request ends).
func (f *Fetcher) CloseIdle() {
	f.tr.CloseIdleConnections()
	if f.h2 != nil {
		f.h2.closeIdle()
	}
}

// dialAddr returns the address to dial for the transport's "host:port".
func (f *Fetcher) dialAddr(ctx context.Context, hostport string) (string, string, error) {
	host, portStr, err := net.SplitHostPort(hostport)
	if err != nil {
		return "", "", fmt.Errorf("fetch: dial %s: %w", hostport, err)
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil {
		return "", "", fmt.Errorf("fetch: dial %s: bad port: %w", hostport, err)
	}
	ip, _ := ctx.Value(addrKey{}).(netip.Addr)
	if !ip.IsValid() {
		if ip, err = netip.ParseAddr(host); err != nil {
			return "", "", fmt.Errorf("fetch: dial %s: no address given for host", hostport)
		}
	}
	return netip.AddrPortFrom(ip.Unmap(), uint16(port)).String(), host, nil
}

func (f *Fetcher) dialRaw(ctx context.Context, hostport string) (net.Conn, string, error) {
	addr, host, err := f.dialAddr(ctx, hostport)
	if err != nil {
		return nil, "", err
	}
	c, err := f.dialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, "", err
	}
	return c, host, nil
}

func (f *Fetcher) dial(ctx context.Context, _, hostport string) (net.Conn, error) {
	c, _, err := f.dialRaw(ctx, hostport)
	if err != nil {
		return nil, err
	}
	return &captureConn{Conn: c}, nil
}

func (f *Fetcher) dialTLS(ctx context.Context, _, hostport string) (net.Conn, error) {
	c, host, err := f.dialRaw(ctx, hostport)
	if err != nil {
		return nil, err
	}
	var cfg *tls.Config
	if f.opts.TLSConfig != nil {
		cfg = f.opts.TLSConfig.Clone()
	} else {
		cfg = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	cfg.ServerName = host
	if cfg.ClientSessionCache == nil {
		cfg.ClientSessionCache = f.sessions // keyed by ServerName: one session per host name
	}
	cfg.NextProtos = []string{"http/1.1"}
	if f.h2 != nil {
		cfg.NextProtos = []string{"h2", "http/1.1"}
	}
	mode := f.opts.TLSVerify
	cfg.InsecureSkipVerify = mode != TLSStrict // record verifies after the handshake
	hctx, cancel := context.WithTimeout(ctx, f.opts.ConnectTimeout)
	defer cancel()
	tc := tls.Client(c, cfg)
	if err := tc.HandshakeContext(hctx); err != nil {
		c.Close()
		return nil, fmt.Errorf("fetch: tls handshake with %s: %w", hostport, err)
	}
	cs := tc.ConnectionState()
	var verr error
	if mode == TLSRecord {
		verr = verifyPeer(cs, cfg.RootCAs, host)
	}
	st := tlsState(cs, mode != TLSOff, verr)
	if cs.NegotiatedProtocol == "h2" && f.h2 != nil {
		addr, _ := ctx.Value(addrKey{}).(netip.Addr)
		if ap, err := netip.ParseAddrPort(c.RemoteAddr().String()); err == nil {
			addr = ap.Addr().Unmap()
		}
		hc, err := f.h2.add(hostport, addr, tc, st)
		if err != nil {
			return nil, fmt.Errorf("fetch: http/2 with %s: %w", hostport, err)
		}
		return nil, &h2Ready{c: hc}
	}
	return &captureConn{Conn: tc, tls: st}, nil
}

// requestAddr checks that req.URL is an absolute http(s) URL and returns the
// address to dial (req.Addr, or the URL's host when it is an address
// literal), or the kind of the failure: no address, or one the guard
// refuses.
func (f *Fetcher) requestAddr(req Request) (netip.Addr, ErrorKind, error) {
	u, err := url.Parse(req.URL)
	if err != nil {
		return netip.Addr{}, ErrOther, err
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return netip.Addr{}, ErrOther, errors.New("not an absolute http(s) URL")
	}
	addr := req.Addr
	if !addr.IsValid() {
		if addr, err = netip.ParseAddr(u.Hostname()); err != nil {
			return netip.Addr{}, ErrOther, errors.New("no address given for the host")
		}
	}
	addr = addr.Unmap()
	if err := f.opts.Guard.Check(addr); err != nil {
		return netip.Addr{}, ErrForbidden, err
	}
	return addr, 0, nil
}

// bodyEnd says how reading a body ended, from what readCapped returned
// (at most maxBody+1 bytes, and its error): the body kept, its Truncated
// value, and for a body cut short by the timeout or the connection the
// kind of failure and the read's error (nil: a success, a body cut at
// maxBody included). overflow reports whether the raw capture overflowed a
// body read in full.
func bodyEnd(ctx context.Context, body []byte, rerr error, maxBody int64, overflow func() bool) ([]byte, string, ErrorKind, error) {
	switch {
	case int64(len(body)) > maxBody:
		return body[:maxBody], TruncatedLength, 0, nil
	case rerr == nil:
		if overflow() {
			return body, TruncatedLength, 0, nil
		}
		return body, "", 0, nil
	case errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(rerr, context.DeadlineExceeded):
		return body, TruncatedTime, ErrTimeout, rerr
	}
	kind := classify(rerr, true)
	if kind == ErrProtocol || kind == ErrOther {
		kind = ErrReset
	}
	if errors.Is(rerr, context.Canceled) {
		kind = ErrOther
	}
	return body, TruncatedDisconnect, kind, rerr
}

// Fetch performs one GET of req.URL on req.Addr. It follows no redirect and
// retries nothing that reached the server.
//
// An HTTP response of any status is a success (nil error) unless the body
// was cut short by the total timeout (Truncated "time") or by a connection
// failure (Truncated "disconnect"); a body cut at MaxBody (Truncated
// "length") is a success. On failure the error describes it ([Classify]
// gives its kind) and, when anything was received, a partial Response is
// returned too, holding what was exchanged (Status is 0 if no status line was
// parsed).
func (f *Fetcher) Fetch(ctx context.Context, req Request) (*Response, error) {
	start := time.Now()
	fail := func(kind ErrorKind, err error) error {
		return &fetchError{kind: kind, url: req.URL, err: err}
	}
	addr, kind, err := f.requestAddr(req)
	if err != nil {
		return nil, fail(kind, err)
	}

	timeout, maxBody, respMax := f.opts.Timeout, f.opts.MaxBody, f.respMax
	if req.Timeout > 0 {
		timeout = req.Timeout
	}
	if req.MaxBody > 0 && req.MaxBody != maxBody {
		maxBody, respMax = req.MaxBody, captureBound(f.opts.MaxHeaderBytes, req.MaxBody)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cp := f.captures.get()
	cp.reset(maxRawRequest, respMax)
	var conn *captureConn
	var reused bool
	trace := &httptrace.ClientTrace{
		GotConn: func(info httptrace.GotConnInfo) {
			cc, ok := info.Conn.(*captureConn)
			if !ok {
				return
			}
			if conn != nil && conn != cc {
				conn.disarm(cp)
			}
			cc.disarm(cp)
			cp.reset(maxRawRequest, respMax)
			cc.arm(cp)
			conn = cc
			reused = info.Reused
		},
	}
	ctx = httptrace.WithClientTrace(context.WithValue(ctx, addrKey{}, addr), trace)
	hreq, err := http.NewRequestWithContext(ctx, http.MethodGet, req.URL, nil)
	if err != nil {
		f.captures.put(cp)
		return nil, fail(ErrOther, err)
	}
	if f.opts.UserAgent != "" {
		hreq.Header.Set("User-Agent", f.opts.UserAgent)
	}
	hreq.Header.Set("Accept", f.opts.Accept)
	hreq.Header.Set("Accept-Encoding", f.opts.AcceptEncoding)
	if req.IfNoneMatch != "" {
		hreq.Header.Set("If-None-Match", req.IfNoneMatch)
	}
	if req.IfModifiedSince != "" {
		hreq.Header.Set("If-Modified-Since", req.IfModifiedSince)
	}

	resp := &Response{URL: req.URL, Addr: addr, Start: start, f: f, cp: cp}
	if f.h2 != nil && hreq.URL.Scheme == "https" {
		if c, reused := f.h2.take(h2Key(hreq.URL), addr); c != nil {
			return f.fetchH2(ctx, req, hreq, resp, c, reused, maxBody, respMax)
		}
	}
	hresp, err := f.tr.RoundTrip(hreq)
	if err != nil {
		var ready *h2Ready
		if errors.As(err, &ready) {
			return f.fetchH2(ctx, req, hreq, resp, ready.c, f.h2.claim(ready.c), maxBody, respMax)
		}
		return f.roundTripFailed(req, resp, conn, cp, err)
	}
	resp.Status = hresp.StatusCode
	resp.Proto = hresp.Proto
	resp.Header = hresp.Header
	resp.Addr = remoteAddr(conn, addr)
	resp.Reused = reused
	if conn != nil {
		resp.TLS = conn.tls
	}
	// Closing before EOF (truncation) makes the transport drop the
	// connection instead of draining it.
	body, ferr := f.readBody(ctx, req, resp, hresp, maxBody, func() bool { return conn != nil && overflowed(conn, cp) })
	resp.End = time.Now()
	if conn != nil {
		conn.disarm(cp)
	}
	resp.RawRequest = cp.req
	resp.RawResponse = trimRaw(cp.resp, len(body), hresp.TransferEncoding)
	if conn != nil && len(resp.RawResponse) < len(cp.resp) && resp.Truncated == "" {
		// Bytes past the response's end: the server sent what no request
		// asked for, which the next response on this connection would be
		// read from. The connection is closed, so the transport sends the
		// next request on a new one.
		conn.Close()
	}
	if ferr != nil {
		f.log.Debug("fetch cut short", "url", req.URL, "addr", resp.Addr, "robots", req.Robots, "truncated", resp.Truncated, "err", ferr)
	}
	return resp, ferr
}

// readBody reads hresp's body into a buffer of the Fetcher, at most
// maxBody bytes, then closes it; it sets resp's Body and Truncated, and
// returns the body and the error that cut it short (nil: a success, a
// body cut at maxBody included). overflow is as for bodyEnd.
func (f *Fetcher) readBody(ctx context.Context, req Request, resp *Response, hresp *http.Response, maxBody int64, overflow func() bool) ([]byte, error) {
	bp := f.getBody()
	body, rerr := readCapped(hresp.Body, *bp, maxBody)
	var kind ErrorKind
	var ferr error
	body, resp.Truncated, kind, rerr = bodyEnd(ctx, body, rerr, maxBody, overflow)
	if rerr != nil {
		ferr = &fetchError{kind: kind, url: req.URL, err: fmt.Errorf("reading body: %w", rerr)}
	}
	hresp.Body.Close()
	*bp = body
	resp.body, resp.Body = bp, body
	return body, ferr
}

// roundTripFailed is Fetch's answer to a round trip that failed with err:
// the error, with a partial resp holding what was exchanged if anything
// was received.
func (f *Fetcher) roundTripFailed(req Request, resp *Response, conn *captureConn, cp *capture, err error) (*Response, error) {
	if conn != nil {
		conn.disarm(cp)
	}
	ferr := f.failure(req, resp, err, conn != nil)
	if conn == nil || len(cp.resp) == 0 {
		f.captures.put(cp)
		return nil, ferr
	}
	resp.Addr = remoteAddr(conn, resp.Addr)
	resp.RawRequest, resp.RawResponse = cp.req, cp.resp
	return resp, ferr
}

// failure is the error of a round trip that failed with err, logged
// (connected: a connection carried the request); it wraps
// ErrHeaderTooLarge when that is why.
func (f *Fetcher) failure(req Request, resp *Response, err error, connected bool) *fetchError {
	resp.End = time.Now()
	kind := classify(err, connected)
	if kind == ErrTooLargeHeader {
		err = fmt.Errorf("%w: %w", ErrHeaderTooLarge, err)
	}
	f.log.Debug("fetch failed", "url", req.URL, "addr", resp.Addr, "robots", req.Robots, "kind", kind, "err", err)
	return &fetchError{kind: kind, url: req.URL, err: err, noConn: !connected}
}

func overflowed(c *captureConn, cp *capture) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return cp.overflow
}

func remoteAddr(c *captureConn, fallback netip.Addr) netip.Addr {
	if c == nil {
		return fallback
	}
	if ap, err := netip.ParseAddrPort(c.RemoteAddr().String()); err == nil {
		return ap.Addr().Unmap()
	}
	return fallback
}

func (f *Fetcher) getBody() *[]byte {
	if b, ok := f.bodies.Get().(*[]byte); ok {
		return b
	}
	b := make([]byte, 0, 32<<10)
	return &b
}

// readCapped reads r into buf until EOF or until more than max bytes have
// been read (at most max+1 are read). It returns io.EOF as nil.
func readCapped(r io.Reader, buf []byte, max int64) ([]byte, error) {
	buf = buf[:0]
	for {
		if len(buf) == cap(buf) {
			next := int64(2*cap(buf)) + 512
			if next > max+1 {
				next = max + 1
			}
			if next <= int64(cap(buf)) {
				return buf, nil // holds max+1 bytes
			}
			nb := make([]byte, len(buf), next)
			copy(nb, buf)
			buf = nb
		}
		room := buf[len(buf):cap(buf)]
		if int64(len(buf)+len(room)) > max+1 {
			room = room[:max+1-int64(len(buf))]
		}
		n, err := r.Read(room)
		buf = buf[:len(buf)+n]
		if int64(len(buf)) > max {
			return buf, nil
		}
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// trimRaw drops from raw any bytes read past the end of a response whose body
// is not chunked (for example bytes beyond Content-Length, or read ahead past
// a truncation point).
func trimRaw(raw []byte, bodyLen int, te []string) []byte {
	if len(te) > 0 {
		return raw
	}
	hl := headerEnd(raw)
	if hl < 0 {
		return raw
	}
	if end := hl + bodyLen; end < len(raw) {
		return raw[:end]
	}
	return raw
}

// headerEnd returns the offset just past the header block of the final
// (non-1xx) response in raw, or -1 if raw holds no complete header block.
func headerEnd(raw []byte) int {
	off := 0
	for {
		blk := raw[off:]
		end := -1
		for i := 0; i < len(blk); {
			j := bytes.IndexByte(blk[i:], '\n')
			if j < 0 {
				break
			}
			line := blk[i : i+j]
			i += j + 1
			if len(line) == 0 || (len(line) == 1 && line[0] == '\r') {
				end = i
				break
			}
		}
		if end < 0 {
			return -1
		}
		// An interim 1xx response (other than 101) precedes the final one.
		if len(blk) > 12 && bytes.HasPrefix(blk, []byte("HTTP/1.")) && blk[9] == '1' && !bytes.HasPrefix(blk[9:], []byte("101")) {
			off += end
			continue
		}
		return off + end
	}
}

// captureBound is the raw capture bound of a response: headers, body, and
// slack for chunk framing.
func captureBound(maxHeader, maxBody int64) int {
	return int(maxHeader + maxBody + maxBody/8 + 64<<10)
}
