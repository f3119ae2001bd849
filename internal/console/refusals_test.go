package console

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestRefusalsBounded: 2,000 requests with a 15 KB Host header are all
// refused and counted, but the event log gets at most refusalsPerSecond
// lines a second, each Host cut to maxLoggedBytes, and the next line
// logged says how many were not.
func TestRefusalsBounded(t *testing.T) {
	var logs bytes.Buffer
	lg := slog.New(slog.NewJSONHandler(&logs, nil))
	addr, _ := net.ResolveTCPAddr("tcp", "127.0.0.1:8080")
	srv := &Server{gate: newGate("secret-token", addr), log: lg, refusal: &refusalLog{log: lg}}
	handler := srv.guard(http.NotFoundHandler())
	host := strings.Repeat("h", 15000)
	start := time.Now()
	for i := 0; i < 2000; i++ {
		r := httptest.NewRequest("GET", "/api/v1/status", nil)
		r.Host = host
		w := httptest.NewRecorder()
		handler.ServeHTTP(w, r)
		if w.Code != http.StatusForbidden {
			t.Fatalf("request %d: %d, want 403", i, w.Code)
		}
	}
	if n := srv.Refused(); n != 2000 {
		t.Errorf("%d refusals counted, want 2000", n)
	}
	seconds := int(time.Since(start)/time.Second) + 2
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(lines) > refusalsPerSecond*seconds {
		t.Errorf("%d lines logged in under %d s, want at most %d a second", len(lines), seconds, refusalsPerSecond)
	}
	if logs.Len() > 4096*len(lines) {
		t.Errorf("%d bytes logged for %d lines: the Host header was not cut", logs.Len(), len(lines))
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &m); err != nil {
		t.Fatal(err)
	}
	if got, _ := m["host"].(string); !strings.HasPrefix(got, strings.Repeat("h", maxLoggedBytes)+"…(15000 bytes)") {
		t.Errorf("host logged as %.300q, want it cut to %d bytes with its length", got, maxLoggedBytes)
	}
}

// TestRefusalLogCountsWhatItDrops: past refusalsPerSecond lines in one
// second, refusals are counted, and the first line of the next second
// says how many were not logged.
func TestRefusalLogCountsWhatItDrops(t *testing.T) {
	var logs bytes.Buffer
	r := &refusalLog{log: slog.New(slog.NewJSONHandler(&logs, nil))}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < refusalsPerSecond+15; i++ {
		r.warn(t0.Add(time.Duration(i)*time.Millisecond), "refused", "remote", "127.0.0.1:1")
	}
	if n := strings.Count(logs.String(), "\n"); n != refusalsPerSecond {
		t.Fatalf("%d lines in one second, want %d", n, refusalsPerSecond)
	}
	r.warn(t0.Add(time.Second), "refused", "remote", "127.0.0.1:1")
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if last := lines[len(lines)-1]; !strings.Contains(last, `"unlogged before":15`) {
		t.Errorf("next second's line: %s, want it to count the 15 not logged", last)
	}
}
