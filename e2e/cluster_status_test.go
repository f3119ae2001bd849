package e2e

import (
	"encoding/json"
	"errors"
	"os/exec"
	"testing"
	"time"

	"github.com/petrel-crawler/petrel/internal/cluster"
)

// clusterStatusReport is the part of petrel cluster status --json that
// the tests read.
type clusterStatusReport struct {
	Leader  string        `json:"leader"`
	Time    time.Time     `json:"time"`
	View    *cluster.View `json:"view"`
	Slots   int           `json:"slots"`
	Members []struct {
		Name      string `json:"name"`
		Exchange  string `json:"exchange"`
		State     string `json:"state"`
		InView    bool   `json:"in_view"`
		Epoch     uint64 `json:"epoch"`
		KeysOwned int    `json:"keys_owned"`
		Answered  bool   `json:"answered"`
		Error     string `json:"error"`
	} `json:"members"`
	Totals struct {
		Members  int `json:"members"`
		Answered int `json:"answered"`
	} `json:"totals"`
}

// clusterStatus runs petrel cluster status --json against the crawl's
// coordinators.
func clusterStatus(t *testing.T, c *clusterRun) (*clusterStatusReport, []byte) {
	t.Helper()
	out, err := exec.Command(petrel, "cluster", "status", "--json", "--coordinators", c.coordinators(), "--cluster-name", "e2e", "--cluster-key-file", c.key).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			out = append(out, ee.Stderr...)
		}
		t.Fatalf("petrel cluster status: %v\n%s", err, out)
	}
	var r clusterStatusReport
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("petrel cluster status --json: %v\n%s", err, out)
	}
	return &r, out
}

// checkClusterStatus asks the running crawl for its status and checks it
// against the view of epoch, which every agent of c is in: each is a
// member, alive, answering at that epoch, and the keys they own add up to
// every slot; a leader is named. The members read the view from their
// watch a moment after its write: the status is asked again, up to 20
// times, until every member answers that epoch. It returns the report.
func checkClusterStatus(t *testing.T, c *clusterRun, epoch uint64) *clusterStatusReport {
	t.Helper()
	var r *clusterStatusReport
	var out []byte
	for try := 0; ; try++ {
		r, out = clusterStatus(t, c)
		at := 0
		for _, m := range r.Members {
			if m.Answered && m.Epoch == epoch {
				at++
			}
		}
		if at == len(c.agents) || try == 20 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if r.Leader == "" || r.View == nil || r.View.Epoch != epoch || len(r.View.Agents) != len(c.agents) ||
		r.Slots != cluster.Slots || len(r.Members) != len(c.agents) || r.Totals.Answered != len(c.agents) {
		t.Fatalf("cluster status: want a leader and the view of epoch %d with %d agents, all answering:\n%s", epoch, len(c.agents), out)
	}
	byName := map[string]int{}
	for i, m := range r.Members {
		byName[m.Name] = i
	}
	sum := 0
	for _, a := range c.agents {
		i, ok := byName[a.name]
		if !ok {
			t.Errorf("cluster status lists no member %s", a.name)
			continue
		}
		m := r.Members[i]
		sum += m.KeysOwned
		if m.State != "alive" || !m.InView || !m.Answered || m.Epoch != epoch || m.Exchange != exchangeOf(t, a) || m.KeysOwned == 0 {
			t.Errorf("cluster status: member %+v", m)
		}
	}
	if sum != cluster.Slots {
		t.Errorf("cluster status: the members own %d slots, want all %d", sum, cluster.Slots)
	}
	return r
}
