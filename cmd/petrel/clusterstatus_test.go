package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/petrel-crawler/petrel/internal/cluster"
	"github.com/petrel-crawler/petrel/internal/coord"
)

// TestClusterStatusReport builds the report of a crawl whose view has
// a, b, c and e with d absent: a and b alive and answering, c alive but
// not answering, e dead (in the view, no lease), f joining, g leaving.
func TestClusterStatusReport(t *testing.T) {
	rec := func(name string, leaving bool) coord.AgentRecord {
		return coord.AgentRecord{Name: name, Exchange: name + ":7947", Leaving: leaving, Figures: coord.Figures{Epoch: 40}}
	}
	var vr coord.ViewRecord
	for _, n := range []string{"a", "b", "c", "e"} {
		vr.Members = append(vr.Members, coord.ViewMember{Name: n, Weight: 1, Exchange: n + ":7947"})
	}
	vr.Absent = []string{"d"}
	st := coord.State{Rev: 41, View: coord.View{ViewRecord: vr, Rev: 40},
		Agents: map[string]coord.AgentRecord{"a": rec("a", false), "b": rec("b", false), "c": rec("c", false), "f": rec("f", false), "g": rec("g", true)}}
	statuses := map[string]*cluster.Status{
		"a:7947": {Name: "a", ViewEpoch: 40, Progress: cluster.Progress{Fetched: 10, Queued: 5, Forwarded: 1}, OutboxURLs: 7, SentURLs: 20, AppliedURLs: 30},
		"b:7947": {Name: "b", ViewEpoch: 40, Progress: cluster.Progress{Fetched: 12, Queued: 1, Forwarded: 2}, SentURLs: 30, AppliedURLs: 20},
		"f:7947": {Name: "f"}, "g:7947": {Name: "g"},
	}
	r := buildReport(st, "a", func(addr string) (*cluster.Status, error) {
		if s, ok := statuses[addr]; ok {
			return s, nil
		}
		return nil, errors.New("connection refused")
	})
	var out bytes.Buffer
	if err := json.NewEncoder(&out).Encode(r); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Leader  string        `json:"leader"`
		View    *cluster.View `json:"view"`
		Slots   int           `json:"slots"`
		Members []struct {
			Name, State string
			InView      bool   `json:"in_view"`
			KeysOwned   int    `json:"keys_owned"`
			Answered    bool   `json:"answered"`
			Error       string `json:"error"`
		} `json:"members"`
		Totals      map[string]any `json:"totals"`
		Unreachable []string       `json:"unreachable"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got.Leader != "a" || got.View.Epoch != 40 || got.Slots != cluster.Slots || len(got.Members) != 7 {
		t.Fatalf("report: %s", out.Bytes())
	}
	wantState := map[string]string{"a": "alive", "b": "alive", "c": "alive", "d": "absent", "e": "dead", "f": "joining", "g": "leaving"}
	sum := 0
	for _, m := range got.Members {
		sum += m.KeysOwned
		inView := strings.Contains("abce", m.Name)
		if m.State != wantState[m.Name] || m.InView != inView || (m.KeysOwned > 0) != inView {
			t.Errorf("member %+v", m)
		}
		if answered := strings.Contains("abfg", m.Name); m.Answered != answered || (m.Error == "") != answered {
			t.Errorf("member %s: answered %v, error %q", m.Name, m.Answered, m.Error)
		}
	}
	if sum != cluster.Slots {
		t.Errorf("keys owned sum to %d, want %d", sum, cluster.Slots)
	}
	if got.Totals["answered"] != 4.0 || got.Totals["members"] != 7.0 || got.Totals["fetched"] != 22.0 || got.Totals["forwarded_urls"] != 3.0 {
		t.Errorf("totals %v", got.Totals)
	}
	if len(got.Unreachable) != 3 || got.Unreachable[0] != "c (connection refused)" {
		t.Errorf("unreachable %q", got.Unreachable)
	}
	out.Reset()
	printReport(&out, r)
	for _, want := range []string{"view: epoch 40: a, b, c, e", "leader (writes views): a", "total: 4 of 7 members answered; 22 pages fetched"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("printed status lacks %q:\n%s", want, out.String())
		}
	}
}
