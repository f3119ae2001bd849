package fetch

import (
	"container/list"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"sort"
	"strconv"
	"sync"
	"time"

	"golang.org/x/net/http2"
)

// Proto2 is Response.Proto of a response received over HTTP/2.
const Proto2 = "HTTP/2.0"

// h2Conn is an HTTP/2 connection to one host name and port, dialled to
// addr, with what its TLS handshake gave.
type h2Conn struct {
	cc   *http2.ClientConn
	key  string // "host:port", as the transport names the connection
	addr netip.Addr
	tls  *TLSState
	used bool          // a request has gone on it (guarded by the pool's mutex)
	elem *list.Element // in the pool's LRU list
}

// h2Ready is the error the transport's TLS dial answers with when the
// server chose "h2" by ALPN: the connection is c, already in the pool, and
// the request goes on it instead of the transport.
type h2Ready struct{ c *h2Conn }

func (e *h2Ready) Error() string { return "fetch: " + e.c.key + " speaks HTTP/2" }

// h2Pool keeps the HTTP/2 connections of a Fetcher, one per host name and
// port, at most max of them idle: adding one beyond closes the least
// recently used idle one. A connection idle for the transport's idle
// timeout closes itself and leaves the pool when next looked up or
// evicted. Its methods are safe for concurrent use.
type h2Pool struct {
	t   *http2.Transport
	max int

	mu    sync.Mutex
	conns map[string]*h2Conn
	lru   list.List // of *h2Conn, most recently used at the front
}

func newH2Pool(opts Options) *h2Pool {
	return &h2Pool{
		t: &http2.Transport{
			DisableCompression: true, // bodies keep their Content-Encoding, as over HTTP/1.1
			MaxHeaderListSize:  uint32(min(opts.MaxHeaderBytes, 1<<32-1)),
			IdleConnTimeout:    opts.IdleConnTimeout,
		},
		max:   opts.MaxIdleConns,
		conns: map[string]*h2Conn{},
	}
}

// add makes an HTTP/2 connection of tc, whose handshake chose "h2", and
// keeps it for key (closing the one it replaces).
func (p *h2Pool) add(key string, addr netip.Addr, tc *tls.Conn, st *TLSState) (*h2Conn, error) {
	cc, err := p.t.NewClientConn(tc)
	if err != nil {
		tc.Close()
		return nil, err
	}
	c := &h2Conn{cc: cc, key: key, addr: addr, tls: st}
	var drop []*h2Conn
	p.mu.Lock()
	if old := p.conns[key]; old != nil {
		p.remove(old)
		drop = append(drop, old)
	}
	c.elem = p.lru.PushFront(c)
	p.conns[key] = c
	for e := p.lru.Back(); len(p.conns) > p.max && e != nil; {
		old := e.Value.(*h2Conn)
		e = e.Prev()
		if st := old.cc.State(); old != c && st.StreamsActive+st.StreamsReserved+st.StreamsPending == 0 {
			p.remove(old)
			drop = append(drop, old)
		}
	}
	p.mu.Unlock()
	for _, old := range drop {
		old.cc.Close()
	}
	return c, nil
}

// take reserves a stream on the connection kept for key to addr and
// reports whether it had carried a request before; nil if there is none
// that can take one (a connection to another address is closed).
func (p *h2Pool) take(key string, addr netip.Addr) (*h2Conn, bool) {
	p.mu.Lock()
	c := p.conns[key]
	if c == nil {
		p.mu.Unlock()
		return nil, false
	}
	if c.addr != addr || !c.cc.ReserveNewRequest() {
		p.remove(c)
		p.mu.Unlock()
		c.cc.Close()
		return nil, false
	}
	p.lru.MoveToFront(c.elem)
	reused := c.used
	c.used = true
	p.mu.Unlock()
	return c, reused
}

// claim marks c, just added, as carrying a request and reports whether
// one had gone on it before (another request may have taken it from the
// pool first).
func (p *h2Pool) claim(c *h2Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	reused := c.used
	c.used = true
	return reused
}

// remove drops c from the pool; p.mu is held.
func (p *h2Pool) remove(c *h2Conn) {
	if p.conns[c.key] == c {
		delete(p.conns, c.key)
	}
	p.lru.Remove(c.elem)
}

// closeIdle closes the connections that carry no request and forgets
// them all (one carrying a request closes when idle, as its idle timeout
// says).
func (p *h2Pool) closeIdle() {
	p.mu.Lock()
	conns := p.conns
	p.conns = map[string]*h2Conn{}
	p.lru.Init()
	p.mu.Unlock()
	for _, c := range conns {
		if st := c.cc.State(); st.StreamsActive+st.StreamsReserved+st.StreamsPending == 0 {
			c.cc.Close()
		} else {
			c.cc.SetDoNotReuse()
		}
	}
}

// errHeaderTimeout ends an HTTP/2 request whose response headers did not
// come within Options.HeaderTimeout.
var errHeaderTimeout = fmt.Errorf("timeout awaiting response headers: %w", context.DeadlineExceeded)

// roundTripH2 sends hreq on c and returns the response once its headers
// have come, within Options.HeaderTimeout. hreq's context must be ctx, a
// context canceled with cancel (stopped with the timer once the headers
// are in, so that the body is read under the caller's deadline only).
func (f *Fetcher) roundTripH2(ctx context.Context, cancel context.CancelCauseFunc, c *h2Conn, hreq *http.Request) (*http.Response, error) {
	timer := time.AfterFunc(f.opts.HeaderTimeout, func() { cancel(errHeaderTimeout) })
	hresp, err := c.cc.RoundTrip(hreq)
	if !timer.Stop() && err != nil {
		if cause := context.Cause(ctx); errors.Is(cause, errHeaderTimeout) {
			err = cause
		}
	}
	return hresp, err
}

// h2Request appends to dst the request hreq as HTTP/1.1 would have
// written it: an HTTP/2 request has no bytes of that form on the wire, and
// a WARC request record holds it so (as the WARC HTTP/2 proposal of the
// IIPC says).
func h2Request(dst []byte, hreq *http.Request) []byte {
	dst = append(dst, hreq.Method...)
	dst = append(dst, ' ')
	dst = append(dst, hreq.URL.RequestURI()...)
	dst = append(dst, " HTTP/1.1\r\nHost: "...)
	dst = append(dst, hreq.Host...)
	if hreq.Host == "" {
		dst = append(dst, hreq.URL.Host...)
	}
	dst = append(dst, "\r\n"...)
	if hreq.Header.Get("User-Agent") == "" {
		dst = append(dst, "User-Agent: Go-http-client/2.0\r\n"...) // what x/net/http2 sends then
	}
	dst = appendHeader(dst, hreq.Header)
	return append(dst, "\r\n"...)
}

// OrigContentLength is the header an HTTP/2 response record keeps the
// server's Content-Length in when the body stored differs from it in
// length.
const OrigContentLength = "X-Orig-Content-Length"

// h2Response appends to dst, up to max bytes in all, the response hresp
// with the body as received, in HTTP/1.1 form: the status line without a
// reason phrase (HTTP/2 has none), the header fields, a Content-Length
// stating the length of body (the server's, when it differs or is absent,
// is kept as OrigContentLength), then the body. HTTP/2 has no chunked
// framing: the body is stored as the DATA frames carried it.
func h2Response(dst []byte, hresp *http.Response, body []byte, max int) ([]byte, bool) {
	dst = append(dst, "HTTP/1.1 "...)
	dst = strconv.AppendInt(dst, int64(hresp.StatusCode), 10)
	dst = append(dst, " \r\n"...)
	h := hresp.Header
	n := strconv.Itoa(len(body))
	if cl := h.Values("Content-Length"); len(cl) != 1 || cl[0] != n {
		h = h.Clone()
		h.Del("Content-Length")
		for _, v := range cl {
			h.Add(OrigContentLength, v)
		}
		h.Set("Content-Length", n)
	}
	dst = appendHeader(dst, h)
	dst = append(dst, "\r\n"...)
	return appendBounded(dst, body, max)
}

// appendHeader appends h's fields, names in sorted order, one line each;
// a value's CR and LF become spaces.
func appendHeader(dst []byte, h http.Header) []byte {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		for _, v := range h[k] {
			dst = append(dst, k...)
			dst = append(dst, ": "...)
			for i := 0; i < len(v); i++ {
				b := v[i]
				if b == '\r' || b == '\n' {
					b = ' '
				}
				dst = append(dst, b)
			}
			dst = append(dst, "\r\n"...)
		}
	}
	return dst
}

// h2Key names the connection of an https URL as the transport names it:
// "host:port", the port 443 when the URL has none.
func h2Key(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = "443"
	}
	return net.JoinHostPort(u.Hostname(), port)
}

// fetchH2 is Fetch over the HTTP/2 connection c (reused: it carried a
// request before): resp gets what was exchanged, its raw request and
// response in HTTP/1.1 form (h2Request, h2Response) in a capture of the
// Fetcher bounded by respMax.
func (f *Fetcher) fetchH2(ctx context.Context, req Request, hreq *http.Request, resp *Response, c *h2Conn, reused bool, maxBody int64, respMax int) (*Response, error) {
	hctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	resp.Addr, resp.TLS, resp.Reused, resp.Proto = c.addr, c.tls, reused, Proto2
	hresp, err := f.roundTripH2(hctx, cancel, c, hreq.WithContext(hctx))
	if err != nil {
		ferr := f.failure(req, resp, err, true)
		f.captures.put(resp.cp)
		return nil, ferr
	}
	resp.Status, resp.Header = hresp.StatusCode, hresp.Header
	body, ferr := f.readBody(ctx, req, resp, hresp, maxBody, func() bool { return false })
	resp.End = time.Now()
	cp := resp.cp
	cp.req = h2Request(cp.req, hreq)
	cp.resp, _ = h2Response(cp.resp, hresp, body, respMax)
	resp.RawRequest, resp.RawResponse = cp.req, cp.resp
	if ferr != nil {
		f.log.Debug("fetch cut short", "url", req.URL, "addr", resp.Addr, "robots", req.Robots, "truncated", resp.Truncated, "err", ferr)
	}
	return resp, ferr
}
