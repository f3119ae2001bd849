package console

import (
	"net"
	"sync"
	"sync/atomic"
)

// MaxConns is the most connections the console holds open at once (its
// Options.MaxConns by default): a browser opens a handful, the event
// stream one more. The agent counts them in the descriptor budget.
const MaxConns = 64

// limitListener accepts at most max connections open at once; one past
// that is closed as soon as it is accepted, and counted, so that a flood
// of idle connections costs the process no more than max descriptors and
// never blocks the accept loop.
type limitListener struct {
	net.Listener
	max     int64
	open    atomic.Int64
	refused atomic.Int64
	// refuse is told of each connection refused (a rate-limited log).
	refuse func(remote net.Addr)
}

// Accept returns the next connection within the cap, closing the ones
// past it.
func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.open.Add(1) <= l.max {
			return &limitConn{Conn: c, l: l}, nil
		}
		l.open.Add(-1)
		l.refused.Add(1)
		if l.refuse != nil {
			l.refuse(c.RemoteAddr())
		}
		c.Close()
	}
}

// limitConn gives its place back once, at its first Close.
type limitConn struct {
	net.Conn
	once sync.Once
	l    *limitListener
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.open.Add(-1) })
	return err
}
