package agent

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/petrel-crawler/petrel/internal/cluster"
	"github.com/petrel-crawler/petrel/internal/console"
	"github.com/petrel-crawler/petrel/internal/frontier"
	"github.com/petrel-crawler/petrel/internal/urlx"
)

// "Why" in a crawl of several agents. The agent asked sends the question
// to the owner of the URL's politeness key (over the exchange:
// cluster.Node.AskWhy); the owner answers from its sieve, frontier,
// archive and logs, and when its sieve knows the URL but nothing of it
// holds or fetched it — the URL went to the ready queue of the agent that
// fetches from its host's address — it asks that agent too, for what that
// one holds alone, and answers with its part. A question is forwarded at
// most twice (asked → key owner → address owner).

// Why tells everything the crawl knows about one URL: this agent's answer
// in a crawl of one agent, the owner's (and the fetching agent's) in a
// cluster.
func (a *Agent) Why(ctx context.Context, raw string) (console.Why, error) {
	n := a.clusterNode.Load()
	if n == nil || a.router == nil {
		return a.whyHere(ctx, raw)
	}
	u, err := urlx.Parse(raw)
	if err != nil {
		return malformed(raw, err), nil
	}
	url := u.String()
	if owner := a.router.OwnerOf([]byte(url)); owner != frontier.Self {
		w, err := a.askWhy(ctx, n, string(owner), url, false)
		if err != nil {
			return console.Why{URL: url}, err
		}
		w.Source += ", asked by agent " + a.cfg.Cluster.Agent
		return w, nil
	}
	return a.whyOwned(ctx, n, u)
}

// whyOwned answers for a URL whose key this agent owns, with the part of
// the agent that fetches from its address when the URL went there.
func (a *Agent) whyOwned(ctx context.Context, n *cluster.Node, u urlx.URL) (console.Why, error) {
	w, err := a.whyHere(ctx, u.String())
	if err != nil || w.State != console.WhyKnown {
		w.Source = a.whySource(w.Source, "the owner of its politeness key")
		return w, err
	}
	rec := u.AppendString(frontier.Meta{}.Append(nil))
	to := a.router.ReadyOwner(rec)
	if to == frontier.Self {
		w.Source = a.whySource(w.Source, "the owner of its politeness key and of its address")
		return w, nil
	}
	part, err := a.askWhy(ctx, n, string(to), u.String(), true)
	if err != nil {
		w.Source = a.whySource(w.Source, "the owner of its politeness key")
		w.Caveats = append(w.Caveats, fmt.Sprintf("agent %s, which fetches from its host's address, did not answer: %v", to, err))
		return w, nil
	}
	if part.State == console.WhyNeverSeen || part.State == console.WhyCacheOnly {
		w.Source = a.whySource(w.Source, "the owner of its politeness key")
		w.Add("agent "+string(to)+" (fetches from its address)", "holds nothing of it: "+part.Detail)
		return w, nil
	}
	// The fetching agent's answer, with what the key's owner knows.
	part.Add("politeness key owned by", "agent "+a.cfg.Cluster.Agent+" (its sieve knows the URL: it was handed to the agent fetching from its address)")
	part.Source = fmt.Sprintf("agent %s (fetches from its host's address), through agent %s (the owner of its politeness key)", to, a.cfg.Cluster.Agent)
	return part, nil
}

func (a *Agent) whySource(src, role string) string {
	return fmt.Sprintf("agent %s (%s): %s", a.cfg.Cluster.Agent, role, src)
}

// askWhy asks agent for its answer about url (local: what it holds alone).
func (a *Agent) askWhy(ctx context.Context, n *cluster.Node, agent, url string, local bool) (console.Why, error) {
	b, err := n.AskWhy(ctx, agent, url, local)
	if err != nil {
		return console.Why{}, fmt.Errorf("%w: agent %s, which holds the URL's part of the crawl, did not answer: %v", console.ErrState, agent, err)
	}
	var w console.Why
	if err := json.Unmarshal(b, &w); err != nil {
		return console.Why{}, fmt.Errorf("agent %s's answer: %v", agent, err)
	}
	return w, nil
}

// WhyJSON answers the exchange's why (cluster.Host): from what this
// agent holds with local; otherwise as the owner of the URL's key (the
// asker's view says it is), adding the fetching agent's part, and never
// sending the question back.
func (h *clusterHost) WhyJSON(ctx context.Context, raw string, local bool) ([]byte, error) {
	a := h.a
	var w console.Why
	u, err := urlx.Parse(raw)
	n := a.clusterNode.Load()
	switch {
	case err != nil:
		w = malformed(raw, err)
	case local || n == nil:
		w, err = a.whyHere(ctx, u.String())
	default:
		w, err = a.whyOwned(ctx, n, u)
	}
	if err != nil {
		return nil, err
	}
	return json.Marshal(w)
}
