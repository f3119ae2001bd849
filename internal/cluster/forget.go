package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"
)

// Forgetting an agent (petrel cluster forget NAME): the operator's word
// that a dead agent will not come back. A view without it is proposed —
// without it in Absent either; if it still owned keys, a takeover view
// (it absent) comes first, at once: the operator has waited — so its
// keys belong to the others and the crawl can end without it. What
// only it held is given up: the URLs in its queues and in its own outbox;
// the figures it last reported (the coordinator asks every member for its
// status now and then), their sum of URLs first, are logged (one line)
// and returned. The batches the others
// hold for it are not given up: they are re-routed to the new owners
// (death.go).

// lastStatuses keeps the last Status each member reported to this agent.
type lastStatuses struct {
	mu   sync.Mutex
	at   time.Time // last poll
	byID map[string]*Status
}

func (l *lastStatuses) put(s *Status) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.byID == nil {
		l.byID = map[string]*Status{}
	}
	l.byID[s.Name] = s
}

func (l *lastStatuses) get(name string) *Status {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.byID[name]
}

// pollStatuses asks every alive member for its status, at most every 20
// probe intervals (the coordinator's figures for a forget): the members of
// v, and an agent out of v that is still leaving, whose last figures are
// what a forget of it gives up if it is killed and never started again.
func (n *Node) pollStatuses(ctx context.Context, v *View) {
	n.last.mu.Lock()
	due := time.Since(n.last.at) >= 20*n.cfg.Timing.probe()
	if due {
		n.last.at = time.Now()
	}
	n.last.mu.Unlock()
	if !due {
		return
	}
	for _, m := range n.aliveMembers() {
		if m.Name == n.cfg.Name || m.Meta.Exchange == "" {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		if s, err := n.client.GetStatus(cctx, m.Meta.Exchange); err == nil && (v.Has(m.Name) || s.Leaving) {
			n.last.put(s)
		}
		cancel()
	}
}

// Forget makes a view without name, an agent that is not alive, and
// returns what was given up with it, as a sentence.
func (n *Node) Forget(ctx context.Context, name string) (string, error) {
	v := n.View()
	switch {
	case v == nil:
		return "", errors.New("this agent has no view yet")
	case name == n.cfg.Name:
		return "", fmt.Errorf("agent %s cannot forget itself; ask another agent", name)
	case n.aliveNames()[name]:
		return "", fmt.Errorf("agent %s is alive: stop it first (forget is for an agent that is gone for good)", name)
	case !v.Has(name) && !slices.Contains(v.Absent, name):
		var err error
		if v, err = n.forgetLeft(ctx, name, v); err != nil { // leftforget.go
			return "", err
		}
	}
	if v.Has(name) {
		// First a takeover, as after G: the new owners await no release
		// from an agent listed absent.
		tv, err := NextView(v, nil, name)
		if err != nil {
			return "", err
		}
		withAbsent(tv, append(slices.Clone(v.Absent), name))
		if err := n.ProposeView(ctx, tv, "petrel cluster forget "+name+": its keys taken over"); err != nil {
			return "", err
		}
		v = tv
	}
	nv, err := NextView(v, nil)
	if err != nil {
		return "", err
	}
	withAbsent(nv, slices.DeleteFunc(slices.Clone(nv.Absent), func(a string) bool { return a == name }))
	given, urls := givenUp(n.last.get(name))
	msg := fmt.Sprintf("forgot agent %s: view %s; given up what only it held: %s, and what it found since; the other agents re-route the batches they hold for it to the new owners", name, nv, given)
	n.log.Warn("cluster: "+msg, "agent", name, "urls", urls)
	if err := n.ProposeView(ctx, nv, "petrel cluster forget "+name); err != nil {
		return "", err
	}
	return msg, nil
}

// serveForget is POST /v1/forget {"name"}: forwarded to the coordinator,
// which holds the members' last figures.
func (n *Node) serveForget(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxControlBytes))
	var req struct {
		Name string `json:"name"`
	}
	if err == nil {
		err = json.Unmarshal(body, &req)
	}
	if err != nil || !ValidName(req.Name) {
		http.Error(w, "want {\"name\": AGENT}", http.StatusBadRequest)
		return
	}
	if c := n.Coordinator(); c != "" && c != n.cfg.Name && r.URL.Query().Get("forwarded") == "" {
		if addr := n.exchangeOf(c); addr != "" {
			out, err := n.client.post(r.Context(), addr, "/v1/forget?forwarded=1", body)
			var se *StatusError
			switch {
			case errors.As(err, &se):
				http.Error(w, se.Body, se.Code)
			case err != nil:
				http.Error(w, err.Error(), http.StatusBadGateway)
			default:
				w.Write(out)
			}
			return
		}
	}
	ctx, cancel := context.WithTimeout(r.Context(), 20*time.Second)
	defer cancel()
	msg, err := n.Forget(ctx, req.Name)
	if err != nil {
		http.Error(w, err.Error(), http.StatusConflict)
		return
	}
	io.WriteString(w, msg+"\n")
}

// Forget asks the crawl, through the agent whose exchange is at addr, to
// forget agent name; it returns the crawl's sentence on what was given up.
func (c *Client) Forget(ctx context.Context, addr, name string) (string, error) {
	body, _ := json.Marshal(map[string]string{"name": name})
	out, err := c.post(ctx, addr, "/v1/forget", body)
	return string(out), err
}

// givenUp says what a forget gives up of an agent whose last status is s
// (nil: none was reported to this agent), and its count of URLs (-1:
// unknown): those queued in its frontier and those in its outbox's
// batches. Its unapplied inbox is known in bytes only.
func givenUp(s *Status) (string, int64) {
	if s == nil {
		return "its figures are unknown here (it reported no status to this agent)", -1
	}
	urls := s.Queued + s.OutboxURLs
	return fmt.Sprintf("%d URLs (at its last status (%s%s) it had %d URLs queued and %d URLs in %d batches (%d bytes) in its outbox) and %d bytes of inbox unapplied",
		urls, s.Time.Format(time.RFC3339), leaveNote(s), s.Queued, s.OutboxURLs, s.OutboxBatches, s.OutboxBytes, s.InboxUnapplied), urls
}

// leaveNote marks the last status of an agent taken during its leave:
// what it had handed over by then is not given up.
func leaveNote(s *Status) string {
	if s.Leaving {
		return ", during its leave"
	}
	return ""
}
