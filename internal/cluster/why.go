package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
)

// "Why isn't this URL fetched?" in a crawl of several agents: the agent
// asked finds the owner of the URL's politeness key and asks it, over the
// exchange (GET /v1/why?url=U), for what it knows; the owner adds the part
// of the agent that fetches from the URL's address when it handed the URL
// to that agent's ready queue. An answer is JSON, made by the host
// (Host.WhyJSON); the node only carries it.
//
//	GET /v1/why?url=U[&local=1]
//	             the host's answer for U (200, JSON); with local=1 it
//	             answers from what it holds itself and asks no one (so a
//	             question is forwarded at most once each way)

// maxWhyBytes bounds an answer.
const maxWhyBytes = maxControlBytes

func (n *Node) serveWhy(w http.ResponseWriter, r *http.Request) {
	u := r.URL.Query().Get("url")
	if u == "" {
		http.Error(w, "give ?url=URL", http.StatusBadRequest)
		return
	}
	b, err := n.host.WhyJSON(r.Context(), u, r.URL.Query().Get("local") == "1")
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	if len(b) > maxWhyBytes {
		http.Error(w, "answer too large", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(b)
}

// ErrNotMember is returned by AskWhy for an agent that is not an alive
// member of the crawl.
var ErrNotMember = errors.New("cluster: not an alive member of the crawl")

// AskWhy asks the agent named agent what it knows of url (with local, from
// what it holds alone), over the exchange, and returns its JSON answer.
func (n *Node) AskWhy(ctx context.Context, agent, rawURL string, local bool) ([]byte, error) {
	addr := n.exchangeOf(agent)
	if addr == "" {
		return nil, fmt.Errorf("agent %s: %w", agent, ErrNotMember)
	}
	path := "/v1/why?url=" + url.QueryEscape(rawURL)
	if local {
		path += "&local=1"
	}
	b, err := n.client.do(ctx, http.MethodGet, addr, path, nil)
	if err != nil {
		return nil, fmt.Errorf("agent %s: %w", agent, err)
	}
	if !json.Valid(b) {
		return nil, fmt.Errorf("agent %s: the answer is not JSON", agent)
	}
	return b, nil
}
