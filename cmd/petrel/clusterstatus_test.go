package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/petrel-crawler/petrel/internal/cluster"
)

// TestClusterStatusReport builds the report of a crawl whose view has
// three agents: a answered (and lists the members), b answered, c is
// suspect and did not answer, d is dead (out of the view), e is in the
// view but unknown to a's gossip.
func TestClusterStatusReport(t *testing.T) {
	v, err := cluster.NewView(4, []cluster.ViewAgent{{Name: "a"}, {Name: "b"}, {Name: "c"}, {Name: "e"}})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC)
	member := func(name, state string, ago time.Duration) cluster.Member {
		return cluster.Member{Name: name, Addr: name + ":7946", State: state,
			Meta: cluster.Meta{Exchange: name + ":7947", ViewEpoch: 3}, LastHeard: now.Add(-ago)}
	}
	first := &cluster.Status{Name: "a", ViewEpoch: 4, Time: now, View: v,
		Progress:   cluster.Progress{Fetched: 10, Queued: 5, Forwarded: 1},
		OutboxURLs: 7, SentURLs: 20, AppliedURLs: 30,
		Members: []cluster.Member{member("a", "alive", 0), member("b", "alive", time.Second),
			member("c", "suspect", 3*time.Second), member("d", "dead", time.Minute)}}
	b := &cluster.Status{Name: "b", ViewEpoch: 4, Time: now, View: v,
		Progress: cluster.Progress{Fetched: 12, Queued: 1, Forwarded: 2}, SentURLs: 30, AppliedURLs: 20}
	r := buildReport(first, map[string]*cluster.Status{"a": first, "b": b},
		map[string]string{"c": "connection refused", "d": "dead"})
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	if err := enc.Encode(r); err != nil {
		t.Fatal(err)
	}
	var got struct {
		View    *cluster.View `json:"view"`
		Slots   int           `json:"slots"`
		Members []struct {
			Name, State string
			InView      bool       `json:"in_view"`
			Epoch       uint64     `json:"epoch"`
			KeysOwned   int        `json:"keys_owned"`
			Answered    bool       `json:"answered"`
			Fetched     int64      `json:"fetched"`
			LastHeard   *time.Time `json:"last_heard"`
			Error       string     `json:"error"`
		} `json:"members"`
		Totals      map[string]any    `json:"totals"`
		Agents      []json.RawMessage `json:"agents"`
		Unreachable []string          `json:"unreachable"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got.View.Epoch != 4 || got.Slots != cluster.Slots || len(got.Members) != 5 || len(got.Agents) != 2 {
		t.Fatalf("report: %s", out.Bytes())
	}
	sum := 0
	wantState := map[string]string{"a": "alive", "b": "alive", "c": "suspect", "d": "dead", "e": "unknown"}
	for _, m := range got.Members {
		sum += m.KeysOwned
		if m.State != wantState[m.Name] || m.InView != (m.Name != "d") || (m.KeysOwned > 0) != m.InView {
			t.Errorf("member %+v", m)
		}
		if answered := m.Name == "a" || m.Name == "b"; m.Answered != answered || (m.Epoch == 4) != answered || (m.Error == "") != answered {
			t.Errorf("member %s: answered %v, epoch %d, error %q", m.Name, m.Answered, m.Epoch, m.Error)
		}
		if (m.LastHeard == nil) != (m.Name == "e") {
			t.Errorf("member %s last heard %v", m.Name, m.LastHeard)
		}
	}
	if sum != cluster.Slots {
		t.Errorf("keys owned sum to %d, want %d", sum, cluster.Slots)
	}
	if got.Totals["answered"] != 2.0 || got.Totals["members"] != 5.0 || got.Totals["fetched"] != 22.0 || got.Totals["forwarded_urls"] != 3.0 {
		t.Errorf("totals %v", got.Totals)
	}
	if len(got.Unreachable) != 3 || got.Unreachable[0] != "c (connection refused)" {
		t.Errorf("unreachable %q", got.Unreachable)
	}
	out.Reset()
	printReport(&out, r)
	for _, want := range []string{"view: epoch 4: a, b, c, e", "1s ago", "total: 2 of 5 members answered; 22 pages fetched"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("printed status lacks %q:\n%s", want, out.String())
		}
	}
	rows := map[string][]string{}
	for _, line := range strings.Split(out.String(), "\n") {
		if f := strings.Fields(line); len(f) > 2 {
			rows[f[0]] = f
		}
	}
	if c := rows["c"]; len(c) < 3 || c[2] != "suspect" || rows["e"][2] != "unknown" {
		t.Errorf("printed status:\n%s", out.String())
	}
}
