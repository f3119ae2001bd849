package fetch

import (
	"net"
	"sync"
)

// A capture records the bytes of one exchange: what was written for the
// request and what was read for the response, each up to a limit.
type capture struct {
	req, resp       []byte
	reqMax, respMax int
	overflow        bool // resp reached respMax and bytes were dropped
}

func (c *capture) reset(reqMax, respMax int) {
	c.req, c.resp = c.req[:0], c.resp[:0]
	c.reqMax, c.respMax = reqMax, respMax
	c.overflow = false
}

func appendBounded(dst, p []byte, max int) ([]byte, bool) {
	room := max - len(dst)
	if room >= len(p) {
		return append(dst, p...), false
	}
	if room > 0 {
		dst = append(dst, p[:room]...)
	}
	return dst, true
}

// captureConn is a net.Conn that copies what is written to and read from it
// into the capture armed for the request it currently carries. With HTTP/1.1
// and no pipelining a connection carries one request at a time; bytes moving
// while no capture is armed (between requests) are not recorded.
type captureConn struct {
	net.Conn
	tls *TLSState // what the TLS handshake gave (nil for plain http); set at dial, never changed
	mu  sync.Mutex
	cap *capture
}

func (c *captureConn) arm(cp *capture) {
	c.mu.Lock()
	c.cap = cp
	c.mu.Unlock()
}

// disarm stops recording into cp, if it is still the armed capture. After it
// returns, the connection no longer touches cp.
func (c *captureConn) disarm(cp *capture) {
	c.mu.Lock()
	if c.cap == cp {
		c.cap = nil
	}
	c.mu.Unlock()
}

func (c *captureConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.mu.Lock()
		if cp := c.cap; cp != nil {
			var over bool
			cp.resp, over = appendBounded(cp.resp, p[:n], cp.respMax)
			cp.overflow = cp.overflow || over
		}
		c.mu.Unlock()
	}
	return n, err
}

// Write records p before writing it: once the bytes are on the wire the
// server may answer and the fetch end (disarming the capture) before this
// goroutine runs again, and the request record would lose them. What the
// connection did not take is cut off again.
func (c *captureConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	cp := c.cap
	start := 0
	if cp != nil {
		start = len(cp.req)
		cp.req, _ = appendBounded(cp.req, p, cp.reqMax)
	}
	c.mu.Unlock()
	n, err := c.Conn.Write(p)
	if n < len(p) && cp != nil {
		c.mu.Lock()
		if c.cap == cp && len(cp.req) > start+n {
			cp.req = cp.req[:start+n]
		}
		c.mu.Unlock()
	}
	return n, err
}

// capturePool recycles capture buffers; see [Response.Release].
type capturePool struct{ p sync.Pool }

func (p *capturePool) get() *capture {
	if c, ok := p.p.Get().(*capture); ok {
		return c
	}
	return &capture{}
}

func (p *capturePool) put(c *capture) {
	// Do not keep huge buffers alive in the pool.
	if cap(c.resp) > 1<<20 {
		c.resp = nil
	}
	c.req, c.resp = c.req[:0], c.resp[:0]
	p.p.Put(c)
}
