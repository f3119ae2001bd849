package console

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/petrel-crawler/petrel/internal/netcap/netcaptest"
)

// shellCrawl is a Crawl for a console that serves only its page shell.
type shellCrawl struct{ Crawl }

func (shellCrawl) Checkpoint(context.Context) error { return nil }

// TestConnectionCap: a console holds at most MaxConns connections open;
// those past it are closed at once and counted, and once the idle ones
// close, the console answers again.
func TestConnectionCap(t *testing.T) {
	var logs netcaptest.Log
	srv, err := Listen(Options{Addr: "127.0.0.1:0", Token: "secret-token-0123456789", Crawl: shellCrawl{}, MaxConns: 8,
		Logger: logs.Logger()})
	if err != nil {
		t.Fatal(err)
	}
	go http.Serve(srv.ln, srv.Handler())
	defer srv.Close()
	var idle []net.Conn
	for i := 0; i < 8; i++ {
		c, err := net.Dial("tcp", srv.Addr())
		if err != nil {
			t.Fatal(err)
		}
		idle = append(idle, c)
	}
	for i := 0; i < 20; i++ {
		c, err := net.Dial("tcp", srv.Addr())
		if err != nil {
			t.Fatal(err)
		}
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if n, err := c.Read(make([]byte, 1)); err == nil || n > 0 {
			t.Fatalf("connection %d past the cap: read %d, %v; want it closed", i, n, err)
		}
		c.Close()
	}
	if n := srv.ConnsRefused(); n != 20 {
		t.Errorf("%d connections refused, want 20", n)
	}
	if open := srv.ln.Open(); open != 8 {
		t.Errorf("%d connections open, want 8", open)
	}
	if n := strings.Count(logs.String(), "console: refused a connection: too many connections open"); n == 0 || n > 2 {
		t.Errorf("%d refusals logged, want some, at most one a second", n)
	}
	for _, c := range idle {
		c.Close()
	}
	deadline := time.Now().Add(5 * time.Second)
	for srv.ln.Open() > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	resp, err := http.Get(srv.URL() + "app.css")
	if err != nil {
		t.Fatalf("after the idle connections closed: %v", err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("after the idle connections closed: %d", resp.StatusCode)
	}
}
