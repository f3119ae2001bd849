// Package netcaptest floods a capped listener (netcap) with idle
// connections for the tests of the packages that own one.
//
// Files:
//
//	flood.go  Flood, Refused: idle connections, and the check that those past a cap are closed at once; Log
package netcaptest

import (
	"errors"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// Log is a log sink safe for concurrent use, to read what a listener
// logged. The zero value is empty and ready.
type Log struct {
	mu sync.Mutex
	b  strings.Builder
}

// Logger returns a logger of warnings and above, written to l.
func (l *Log) Logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

func (l *Log) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String is what was written.
func (l *Log) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Flood opens n idle connections to addr (closed when the test ends),
// failing the test if one cannot be opened.
func Flood(t testing.TB, addr string, n int) []net.Conn {
	t.Helper()
	cs := make([]net.Conn, 0, n)
	t.Cleanup(func() {
		for _, c := range cs {
			c.Close()
		}
	})
	for i := range n {
		c, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if err != nil {
			t.Fatalf("connection %d of %d to %s: %v", i+1, n, addr, err)
		}
		cs = append(cs, c)
	}
	return cs
}

// Refused fails the test unless each of cs is closed by its server
// within a second: a read returns EOF or a reset, not a timeout nor
// data.
func Refused(t testing.TB, cs []net.Conn) {
	t.Helper()
	deadline := time.Now().Add(time.Second)
	for i, c := range cs {
		c.SetReadDeadline(deadline)
		n, err := c.Read(make([]byte, 1))
		if n > 0 || err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("connection %d of %d past the cap: read %d bytes, %v; want it closed within a second", i+1, len(cs), n, err)
		}
	}
}
