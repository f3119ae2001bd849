package fetch

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
)

// TestRequestCapturedWhenResetFast: the request of a response that comes
// back, and is cut by a reset, before the writing goroutine runs again is
// still recorded.
func TestRequestCapturedWhenResetFast(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/ok" {
			fmt.Fprint(w, "ok")
			return
		}
		conn, bw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		body := strings.Repeat("x", 1000)
		fmt.Fprintf(bw, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", 10*len(body), body)
		bw.Flush()
		conn.(*net.TCPConn).SetLinger(0)
		conn.Close()
	})
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	defer srv.Close()
	f := New(Options{Guard: Guard{AllowPrivate: true}})
	defer f.CloseIdle()
	for i := range 40 {
		p := "/reset"
		if i%3 == 0 {
			p = "/ok"
		}
		resp, _ := f.Fetch(context.Background(), Request{URL: "http://" + ln.Addr().String() + p})
		if resp == nil {
			t.Fatalf("fetch %d of %s: no response", i, p)
		}
		if want := "GET " + p + " HTTP/1.1\r\n"; !bytes.HasPrefix(resp.RawRequest, []byte(want)) {
			t.Errorf("fetch %d of %s: request recorded as %q", i, p, resp.RawRequest)
		}
		resp.Release()
	}
}
