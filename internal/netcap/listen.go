package netcap

import (
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Listener is a net.Listener that holds at most Max connections open:
// one past that is closed as soon as it is accepted, counted and
// logged. A connection it returns gives its place back at its first
// Close. Build one with Limit; it is safe for concurrent use.
type Listener struct {
	net.Listener
	name    string
	max     int64
	log     *slog.Logger
	open    atomic.Int64
	refused atomic.Int64

	mu       sync.Mutex // held while refusing, to count and log in order
	logged   time.Time  // when the last refusal was logged
	unlogged int64      // refusals since then, not logged
}

// Limit wraps ln so that at most n connections (at least 1) are open at
// once. Its refusals are logged to log (nil: not logged) as "NAME:
// refused a connection: too many connections open", at most once a
// second.
func Limit(ln net.Listener, n int, name string, log *slog.Logger) *Listener {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Listener{Listener: ln, name: name, max: int64(max(n, 1)), log: log}
}

// Accept returns the next connection within the cap, closing the ones
// past it. It returns only the underlying listener's errors.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.open.Add(1) <= l.max {
			return &conn{Conn: c, l: l}, nil
		}
		l.open.Add(-1)
		l.refuse(time.Now(), c.RemoteAddr())
		c.Close() // after the count and the log: its peer reading EOF sees both
	}
}

// Max is the cap.
func (l *Listener) Max() int { return int(l.max) }

// Open is the number of connections open now.
func (l *Listener) Open() int { return int(l.open.Load()) }

// Refused is the number of connections closed as soon as accepted, for
// being past the cap, since Limit.
func (l *Listener) Refused() int64 { return l.refused.Load() }

// refuse counts the refusal of a connection from remote and logs it,
// unless one was logged less than a second before now.
func (l *Listener) refuse(now time.Time, remote net.Addr) {
	l.mu.Lock()
	defer l.mu.Unlock()
	total := l.refused.Load() + 1 // written under mu only
	if now.Sub(l.logged) < time.Second {
		l.unlogged++
	} else {
		l.log.Warn(l.name+": refused a connection: too many connections open",
			"max", l.max, "remote", remote.String(), "refused", total, "unlogged before", l.unlogged)
		l.logged, l.unlogged = now, 0
	}
	l.refused.Store(total) // after the log: who reads the count may read the log
}

// conn gives its place back once, at its first Close.
type conn struct {
	net.Conn
	once sync.Once
	l    *Listener
}

func (c *conn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.open.Add(-1) })
	return err
}
