package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
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
