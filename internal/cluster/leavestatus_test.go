package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestLeavingStatusKept: a leaving agent's report of its status is kept by
// the others as its last status (what a forget of it gives up), and a
// status that is not a leaving agent's is refused.
func TestLeavingStatusKept(t *testing.T) {
	ha, hb := newTestHost(), newTestHost()
	a := mustNode(t, "a", nil, 2, ha)
	defer a.Close(100 * time.Millisecond)
	b := mustNode(t, "b", []string{a.cfg.Bind.String()}, 2, hb)
	defer b.Close(100 * time.Millisecond)
	waitReady(t, a, b)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	body, _ := json.Marshal(b.Status())
	_, err := b.client.post(ctx, a.cfg.ExchangeAddr(), "/v1/status/leaving", body)
	var se *StatusError
	if !errors.As(err, &se) || se.Code != http.StatusBadRequest || a.last.get("b") != nil {
		t.Fatalf("the status of an agent not leaving: %v, kept %v", err, a.last.get("b"))
	}
	if err := b.Leaving(); err != nil {
		t.Fatal(err)
	}
	b.ReportLeaving(ctx)
	s := a.last.get("b")
	if s == nil || !s.Leaving || s.Name != "b" || leaveNote(s) == "" {
		t.Fatalf("a's last status of b after its report: %+v", s)
	}
}

// TestForgetGivenUp: the forget's sentence on a last status leads with
// the URLs given up, those queued and those in the outbox's batches.
func TestForgetGivenUp(t *testing.T) {
	if msg, urls := givenUp(nil); urls != -1 || !strings.Contains(msg, "unknown") {
		t.Errorf("no status: %d, %q", urls, msg)
	}
	s := &Status{Leaving: true, Progress: Progress{Queued: 3}, OutboxURLs: 50, OutboxBatches: 1, OutboxBytes: 900, InboxUnapplied: 7}
	msg, urls := givenUp(s)
	if want := "53 URLs (at its last status (0001-01-01T00:00:00Z, during its leave) it had 3 URLs queued and 50 URLs in 1 batches (900 bytes) in its outbox) and 7 bytes of inbox unapplied"; urls != 53 || msg != want {
		t.Errorf("givenUp: %d, %q; want 53, %q", urls, msg, want)
	}
}
