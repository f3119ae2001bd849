package testweb

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"
)

// A Hit's End must never be later than the moment the client could have
// had the whole response, or a crawler that waited its delay would seem to
// have skipped it: a handler that takes time.Now() after its flush can be
// descheduled for tens of milliseconds on a loaded machine before it reads
// the clock. So End is taken from the connection instead: a stampConn
// notes the time just before each write that hands bytes to the kernel,
// and the End of a response is the note of its last such write. The client
// reads those bytes after the write began, so
//
//	Hit.End ≤ when the client had the response's last byte,
//
// and the error is one-sided: End may be early by the length of that last
// write (microseconds on loopback, more if the writer is preempted inside
// it), which can only hide part of a too-short gap, never invent one.
// Start, taken when the handler begins, is likewise never earlier than the
// client's sending of the request.
//
// A write that begins after the connection has seen its peer close is not
// noted (nobody reads it). Between the client's close and the server's
// seeing it, a write can still be noted: such a Hit is marked Cut, and its
// End may be later than the client's giving up.

// stampConn is a connection that remembers when its last write began and
// whether it has seen its peer close. Safe for concurrent use.
type stampConn struct {
	net.Conn
	mu        sync.Mutex
	lastWrite time.Time
	closed    bool // a read saw the end of the peer's stream (or a reset)
}

func (c *stampConn) Write(p []byte) (int, error) {
	t := time.Now()
	n, err := c.Conn.Write(p)
	if n > 0 {
		c.mu.Lock()
		if !c.closed {
			c.lastWrite = t
		}
		c.mu.Unlock()
	}
	return n, err
}

func (c *stampConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	var ne net.Error
	if err != nil && !(errors.As(err, &ne) && ne.Timeout()) {
		// A timeout is net/http's own deadline (idle, or a background
		// read cut short), not the peer.
		c.mu.Lock()
		c.closed = true
		c.mu.Unlock()
	}
	return n, err
}

// CloseWrite half-closes a TCP connection, as net/http does before closing
// one it answered with an error.
func (c *stampConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// SetLinger sets SO_LINGER of a TCP connection (the hostile web's reset
// case).
func (c *stampConn) SetLinger(sec int) error {
	if tc, ok := c.Conn.(*net.TCPConn); ok {
		return tc.SetLinger(sec)
	}
	return nil
}

// stamp returns the start of the last write noted and whether the peer's
// close had been seen.
func (c *stampConn) stamp() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lastWrite, c.closed
}

// end fills h.End and h.Cut from c: the last write noted, or now when none
// was (nothing was written). Call it when the response is complete.
func (c *stampConn) end(h *Hit) {
	t, closed := c.stamp()
	if t.IsZero() || t.Before(h.Start) {
		t = time.Now() // nothing of this response was written
	}
	h.End, h.Cut = t, closed
}

// stampListener is a listener whose connections are stampConns.
type stampListener struct{ net.Listener }

func (l stampListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &stampConn{Conn: c}, nil
}

type stampKey struct{}

// stampContext, as an http.Server's ConnContext, gives its handlers their
// stampConn (see endHTTP) when the server serves a stampListener (or a TLS
// listener over one: the stamps are then those of the TLS records).
func stampContext(ctx context.Context, c net.Conn) context.Context {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	if sc, ok := c.(*stampConn); ok {
		return context.WithValue(ctx, stampKey{}, sc)
	}
	return ctx
}

// An HTTP/2 connection carries other frames than a response's (flow
// control, pings, settings) and outlives a stream the client reset when it
// gave up: its writes do not date a response. A streamStamp, the
// ResponseWriter of an HTTP/2 request, notes instead when each write,
// WriteHeader and Flush of the handler began while the client still
// wanted the response (its request's context not done). The last bytes of
// a response wait in the server's buffer until the handler's last Flush
// or its return, so End, the note of the last of those, is never later
// than when the client had them; Cut is the client's reset of the stream.
type streamStamp struct {
	http.ResponseWriter
	ctx  context.Context
	last time.Time // guarded by being the handler's: one goroutine
}

// stampStream returns the ResponseWriter a handler of r writes to: a
// streamStamp over rw for HTTP/2, rw itself otherwise.
func stampStream(rw http.ResponseWriter, r *http.Request) http.ResponseWriter {
	if r.ProtoMajor != 2 {
		return rw
	}
	return &streamStamp{ResponseWriter: rw, ctx: r.Context()}
}

func (s *streamStamp) note() {
	if s.ctx.Err() == nil {
		s.last = time.Now()
	}
}

func (s *streamStamp) WriteHeader(code int) {
	s.note()
	s.ResponseWriter.WriteHeader(code)
}

func (s *streamStamp) Write(p []byte) (int, error) {
	s.note()
	return s.ResponseWriter.Write(p)
}

func (s *streamStamp) Flush() {
	s.note()
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap gives http.ResponseController the server's writer.
func (s *streamStamp) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// endHTTP flushes the response of r, then fills h.End and h.Cut from its
// stream (HTTP/2: rw is a streamStamp) or its connection (h.End is now
// when the connection is not a stampConn). The response must have a
// Content-Length (net/http writes nothing more after the handler returns).
func endHTTP(h *Hit, rw http.ResponseWriter, r *http.Request) {
	if f, ok := rw.(http.Flusher); ok {
		f.Flush()
	}
	if s, ok := rw.(*streamStamp); ok {
		h.End, h.Cut = s.last, s.ctx.Err() != nil
		if h.End.IsZero() { // nothing was written while the client waited
			h.End = h.Start
		}
		return
	}
	if c, ok := r.Context().Value(stampKey{}).(*stampConn); ok {
		c.end(h)
		return
	}
	h.End = time.Now()
}
