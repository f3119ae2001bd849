package netcap

import (
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/petrel-crawler/petrel/internal/netcap/netcaptest"
)

// TestRefusesPastTheCap: with max connections open, each further one is
// closed at once (its reader sees EOF or a reset within a second),
// counted, and logged at most once a second; the ones within the cap
// keep working, and a place given back is taken again.
func TestRefusesPastTheCap(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var logs netcaptest.Log
	l := Limit(inner, 4, "test", logs.Logger())
	defer l.Close()
	go func() { // an echo server
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	var held []net.Conn
	for range 4 {
		held = append(held, dialEcho(t, l.Addr().String()))
	}
	const extra = 10
	for i := range extra {
		c, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		c.SetReadDeadline(time.Now().Add(time.Second))
		if n, err := c.Read(make([]byte, 1)); n > 0 || err == nil || isTimeout(err) {
			t.Fatalf("connection %d past the cap: read %d, %v; want it closed at once", i, n, err)
		}
		c.Close()
	}
	if n := l.Refused(); n != extra {
		t.Errorf("Refused() = %d, want %d", n, extra)
	}
	if n := l.Open(); n != 4 {
		t.Errorf("Open() = %d, want 4", n)
	}
	if n := strings.Count(logs.String(), "test: refused a connection: too many connections open"); n < 1 || n > 2 {
		t.Errorf("%d refusals logged in a burst of %d, want 1 or 2 (at most one a second):\n%s", n, extra, logs.String())
	}
	echo(t, held[0]) // within the cap: served
	held[0].Close()
	deadline := time.Now().Add(2 * time.Second)
	for l.Open() > 3 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	echo(t, dialEcho(t, l.Addr().String())) // the place given back is taken
}

func dialEcho(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	echo(t, c)
	return c
}

func echo(t *testing.T, c net.Conn) {
	t.Helper()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(c, make([]byte, 1)); err != nil {
		t.Fatalf("within the cap: %v", err)
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// TestCloseGivesThePlaceBackOnce: closing a connection twice frees one
// place, not two.
func TestCloseGivesThePlaceBackOnce(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := Limit(inner, 2, "test", nil)
	defer l.Close()
	go net.Dial("tcp", l.Addr().String())
	c, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	c.Close()
	if n := l.Open(); n != 0 {
		t.Errorf("Open() = %d after a double close, want 0", n)
	}
}
