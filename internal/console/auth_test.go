package console

import (
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestLoadToken(t *testing.T) {
	p := filepath.Join(t.TempDir(), "state", "console.token")
	tok, err := LoadToken(p)
	if err != nil || len(tok) != 2*tokenBytes {
		t.Fatalf("LoadToken = %q, %v", tok, err)
	}
	fi, err := os.Stat(p)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file mode %v, %v; want 0600", fi.Mode(), err)
	}
	again, err := LoadToken(p)
	if err != nil || again != tok {
		t.Fatalf("second LoadToken = %q, %v; want the same token", again, err)
	}
	os.WriteFile(p, []byte("  \n"), 0o600)
	if _, err := LoadToken(p); err == nil {
		t.Fatal("an empty token file was accepted")
	}
}

// TestLoadTokenRefusesWeakFiles: a token file others may read, or holding
// a token of a character, is refused on one line, as the cluster key file
// is; a token of minTokenLen characters in a 0600 file is taken.
func TestLoadTokenRefusesWeakFiles(t *testing.T) {
	for _, c := range []struct {
		name, token string
		mode        os.FileMode
		want        string // in the error; "" = accepted
	}{
		{"world-writable", strings.Repeat("k", 32), 0o666, "mode 0666 lets others read the token; chmod 600 it"},
		{"group-readable", strings.Repeat("k", 32), 0o640, "mode 0640"},
		{"one character", "x", 0o600, "a 1-character token is too easy to guess; want at least 16"},
		{"fifteen characters", strings.Repeat("k", 15), 0o600, "want at least 16"},
		{"sixteen characters", strings.Repeat("k", 16), 0o600, ""},
		{"owner read-only", strings.Repeat("k", 16), 0o400, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "console.token")
			if err := os.WriteFile(p, []byte(c.token+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(p, c.mode); err != nil {
				t.Fatal(err)
			}
			tok, err := LoadToken(p)
			switch {
			case c.want == "" && (err != nil || tok != c.token):
				t.Errorf("LoadToken = %q, %v; want the token", tok, err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n")):
				t.Errorf("LoadToken = %q, %v; want one line saying %q", tok, err, c.want)
			}
		})
	}
}

// guarded returns the console's access rules around a handler that
// records whether it ran, for a server bound to bound.
func guarded(bound string) (http.Handler, *gate, *bool) {
	addr, _ := net.ResolveTCPAddr("tcp", bound)
	lg := slog.New(slog.NewTextHandler(io.Discard, nil))
	s := &Server{gate: newGate("secret-token", addr), log: lg, refusal: &refusalLog{log: lg}}
	ran := new(bool)
	return s.guard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { *ran = true })), s.gate, ran
}

func TestGuard(t *testing.T) {
	cases := []struct {
		bound, method, path, host, auth string
		want                            int
	}{
		// Loopback: reads are free, changes need the token.
		{"127.0.0.1:8080", "GET", "/api/v1/status", "127.0.0.1:8080", "", 200},
		{"127.0.0.1:8080", "GET", "/api/v1/status", "localhost:8080", "", 200},
		{"127.0.0.1:8080", "POST", "/api/v1/pause", "127.0.0.1:8080", "", 401},
		{"127.0.0.1:8080", "POST", "/api/v1/pause", "127.0.0.1:8080", "Bearer wrong", 401},
		{"127.0.0.1:8080", "POST", "/api/v1/pause", "127.0.0.1:8080", "Bearer secret-token", 200},
		{"127.0.0.1:8080", "PATCH", "/api/v1/config", "127.0.0.1:8080", "Basic secret-token", 401},
		{"127.0.0.1:8080", "GET", "/api/v1/log?follow=1", "127.0.0.1:8080", "", 401},
		// DNS rebinding: a foreign Host is refused, token or not.
		{"127.0.0.1:8080", "GET", "/", "evil.example:8080", "", 403},
		{"127.0.0.1:8080", "GET", "/api/v1/status", "evil.example", "Bearer secret-token", 403},
		// Off loopback every call needs the token; the page shell does not.
		{"10.1.2.3:8080", "GET", "/api/v1/status", "10.1.2.3:8080", "", 401},
		{"10.1.2.3:8080", "GET", "/metrics", "10.1.2.3:8080", "", 401},
		{"10.1.2.3:8080", "GET", "/api/v1/status", "10.1.2.3:8080", "Bearer secret-token", 200},
		{"10.1.2.3:8080", "GET", "/", "10.1.2.3:8080", "", 200},
		{"10.1.2.3:8080", "GET", "/", "localhost:8080", "", 403},
		{"10.1.2.3:8080", "POST", "/api/v1/login", "10.1.2.3:8080", "", 200},
	}
	for _, c := range cases {
		h, _, ran := guarded(c.bound)
		req := httptest.NewRequest(c.method, c.path, nil)
		req.Host = c.host
		if c.auth != "" {
			req.Header.Set("Authorization", c.auth)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != c.want || *ran != (c.want == 200) {
			t.Errorf("%s %s %s (Host %s, %q): %d, handler ran %v; want %d", c.bound, c.method, c.path, c.host, c.auth, rec.Code, *ran, c.want)
		}
		if strings.Contains(rec.Body.String(), "secret-token") {
			t.Errorf("%s %s: the answer holds the token", c.method, c.path)
		}
		if c.want != 200 {
			// Errors are JSON, as docs/api.md says, the refusals too.
			var e struct{ Error string }
			if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/json") || json.Unmarshal(rec.Body.Bytes(), &e) != nil || e.Error == "" {
				t.Errorf("%s %s (Host %s): %d answered %q %q, want a JSON error", c.method, c.path, c.host, rec.Code, ct, rec.Body.String())
			}
		}
	}
}

func TestTicketsAndCode(t *testing.T) {
	h, g, ran := guarded("127.0.0.1:8080")
	now := time.Now()
	tk := g.newTicket(now)
	stream := func(ticket string) int {
		*ran = false
		req := httptest.NewRequest("GET", "/api/v1/log?follow=1&ticket="+ticket, nil)
		req.Host = "127.0.0.1:8080"
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code
	}
	if c := stream(tk); c != 200 || !*ran {
		t.Fatalf("stream with a fresh ticket: %d", c)
	}
	if c := stream(tk); c != 401 {
		t.Fatalf("second use of a ticket: %d, want 401", c)
	}
	old := g.newTicket(now.Add(-2 * ticketTTL))
	if g.useTicket(old, now) {
		t.Fatal("an expired ticket was accepted")
	}
	for range maxTickets + 10 {
		g.newTicket(now)
	}
	if len(g.tickets) > maxTickets {
		t.Fatalf("%d tickets kept, bound %d", len(g.tickets), maxTickets)
	}
	code := g.loginCode()
	if tok, ok := g.useCode(code, now); !ok || tok != "secret-token" {
		t.Fatal("the one-time code did not log in")
	}
	if _, ok := g.useCode(code, now); ok {
		t.Fatal("the one-time code worked twice")
	}
}

func TestLogHub(t *testing.T) {
	h := NewLogHub(3)
	f, ok := h.follow()
	if !ok {
		t.Fatal("follow refused")
	}
	h.Write([]byte("a\nb\n"))
	h.Line("c")
	h.Line("d")
	if got := strings.Join(h.Recent(10), ","); got != "b,c,d" {
		t.Fatalf("Recent = %s, want b,c,d", got)
	}
	for range followBuffer + 5 {
		h.Line("x")
	}
	if d := h.takeDropped(f); d != 9 {
		t.Fatalf("dropped %d lines, want 9 (4 + %d + 5 into a buffer of %d)", d, followBuffer, followBuffer)
	}
	h.unfollow(f)
	for range maxFollowers {
		if _, ok := h.follow(); !ok {
			t.Fatal("follow refused below the bound")
		}
	}
	if _, ok := h.follow(); ok {
		t.Fatal("more followers than the bound")
	}
}

func TestTally(t *testing.T) {
	ta := NewTally()
	ta.Seed("http://a.test/")
	now := time.Now()
	ta.Record(Fetch{URL: "http://a.test/robots.txt", Host: "http://a.test", Status: 200, Robots: true, Time: now})
	ta.Record(Fetch{URL: "http://a.test/", Host: "http://a.test", Status: 301, Location: "http://a.test/home", MIME: "text/html", Time: now})
	ta.Record(Fetch{URL: "http://a.test/home", Host: "http://a.test", Status: 200, MIME: "Text/HTML; charset=utf-8", Bytes: 10, Time: now})
	ta.Record(Fetch{URL: "http://b.test/x", Host: "http://b.test", Err: "connect: refused", Time: now})
	if got := ta.StatusCodes(); len(got) != 2 || got[0].Count != 1 {
		t.Errorf("status codes %v (robots.txt is not a page)", got)
	}
	if got := ta.MIMETypes(); len(got) != 1 || got[0] != (Count{"text/html", 2}) {
		t.Errorf("MIME types %v", got)
	}
	s := ta.Seeds()
	if len(s) != 1 || s[0].Status != 200 || s[0].Final != "http://a.test/home" || len(s[0].RedirectTo) != 1 {
		t.Errorf("seeds %+v", s)
	}
	if e := ta.Errors(); len(e) != 1 || e[0].URL != "http://b.test/x" {
		t.Errorf("errors %+v", e)
	}
	if top := ta.topHosts("errors", 1); len(top) != 1 || top[0].Host != "http://b.test" {
		t.Errorf("top hosts by errors %+v", top)
	}
}
