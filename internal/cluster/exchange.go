package cluster

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"
)

// The exchange is HTTP/2 over mutually authenticated TLS (see tls.go):
// one connection per peer pair carries every batch, acknowledgement and
// control call, multiplexed, with HTTP/2's flow control. Endpoints:
//
//	POST /v1/batch   a batch's wire form; 200 once it is durable in the
//	                 inbox (or was already applied), 503 with Retry-After
//	                 when the inbox is full or the agent is stopping,
//	                 400 for a malformed batch
//	POST /v1/hello   {"name", "settings"}: 200 if the cluster-wide
//	                 settings agree, 409 naming the first difference
//	GET  /v1/view    the agent's ownership view (404 before it has one); ?at=E: the digest of its view of epoch E
//	POST /v1/view/prepare, /v1/view/commit, /v1/view/abort
//	                 a view change's two phases (viewchange.go)
//	POST /v1/config/prepare, /v1/config/commit, /v1/config/abort
//	                 a live change of cluster-wide settings (config.go)
//	GET  /v1/config  the config epoch and the values changed under it
//	POST /v1/handoff ?from&epoch&seq: a part of a hand-off (handoff.go);
//	                 200 once the host applied it
//	POST /v1/join    {"name"}: add the agent to the view (join.go)
//	GET  /v1/status  the agent's Status
//	POST /v1/finish  the crawl is over: persist it and stop
//	POST /v1/stop    a whole-crawl stop: stop cleanly (and, with
//	                 ?all=1, tell every member)
//	POST /v1/forget  {"name"}: a view without that agent (forget.go)
//	GET  /v1/why     ?url=U: what the agent knows of U (why.go)

const maxControlBytes = 1 << 20

func (n *Node) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/batch", n.serveBatch)
	mux.HandleFunc("POST /v1/hello", n.serveHello)
	mux.HandleFunc("GET /v1/view", n.serveView)
	mux.HandleFunc("POST /v1/view/prepare", n.serveViewPrepare)
	mux.HandleFunc("POST /v1/view/commit", n.serveViewCommit)
	mux.HandleFunc("POST /v1/view/abort", n.serveViewAbort)
	mux.HandleFunc("POST /v1/config/prepare", n.serveConfigPrepare)
	mux.HandleFunc("POST /v1/config/commit", n.serveConfigCommit)
	mux.HandleFunc("POST /v1/config/abort", n.serveConfigAbort)
	mux.HandleFunc("GET /v1/config", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, n.Config()) })
	mux.HandleFunc("POST /v1/handoff", n.serveHandoff)
	mux.HandleFunc("POST /v1/join", n.serveJoin)
	mux.HandleFunc("GET /v1/status", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, n.Status()) })
	mux.HandleFunc("POST /v1/status/leaving", n.serveLeavingStatus)
	mux.HandleFunc("POST /v1/finish", n.serveFinish)
	mux.HandleFunc("POST /v1/stop", n.serveStop)
	mux.HandleFunc("POST /v1/forget", n.serveForget)
	mux.HandleFunc("GET /v1/why", n.serveWhy)
	return mux
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

func (n *Node) serveBatch(w http.ResponseWriter, r *http.Request) {
	body, err := readBatchBody(w, r)
	if err != nil {
		http.Error(w, "batch too large or cut", http.StatusBadRequest)
		return
	}
	b, err := DecodeBatch(body)
	if err != nil {
		n.counts.refusedBatches.Add(1)
		n.log.Warn("cluster: malformed batch refused", "from", r.RemoteAddr, "bytes", len(body))
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	n.members.heard(b.ID.Sender) // heard.go
	n.markAbsent(w, b.ID.Sender) // declared.go
	if n.dedup.has(b.ID) {
		n.counts.duplicateBatches.Add(1)
		w.WriteHeader(http.StatusOK) // already durable here: acknowledge again
		return
	}
	if n.receiving.Load() == false {
		w.Header().Set("Retry-After", "1")
		http.Error(w, "agent not receiving", http.StatusServiceUnavailable)
		return
	}
	// The applier takes the decoded batch once its frame is durable,
	// instead of reading and decoding it again.
	_, err = n.inbox.AppendNotify(body, func(start, next int64) { n.decoded.put(b, start, next) })
	if err != nil {
		if errors.Is(err, ErrFull) {
			n.counts.inboxFull.Add(1)
		} else {
			n.log.Error("cluster: inbox", "err", err)
		}
		w.Header().Set("Retry-After", "1")
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	n.dedup.add(b.ID)
	n.counts.inboxBatches.Add(1)
	w.WriteHeader(http.StatusOK)
}

// readBatchBody reads a batch posted to the exchange, in one allocation
// of its announced length when it has one.
func readBatchBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	body := http.MaxBytesReader(w, r.Body, MaxBatchBytes)
	if n := r.ContentLength; n > 0 && n <= MaxBatchBytes {
		b := make([]byte, n)
		if _, err := io.ReadFull(body, b); err != nil {
			return nil, err
		}
		return b, nil
	}
	return io.ReadAll(body)
}

// Hello is what an agent sends to compare its cluster-wide settings.
type Hello struct {
	Name     string      `json:"name"`
	Settings [][2]string `json:"settings"` // name, value; in the table's order
}

// HelloReply answers a Hello.
type HelloReply struct {
	OK          bool   `json:"ok"`
	Diff        string `json:"diff,omitempty"`         // the first difference
	ViewEpoch   uint64 `json:"view_epoch,omitempty"`   // the responder's view
	ConfigEpoch uint64 `json:"config_epoch,omitempty"` // the responder's cluster-wide settings
}

func (n *Node) serveHello(w http.ResponseWriter, r *http.Request) {
	var h Hello
	if err := json.NewDecoder(io.LimitReader(r.Body, maxControlBytes)).Decode(&h); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	rep := HelloReply{OK: true, ViewEpoch: n.viewEpoch(), ConfigEpoch: n.ConfigEpoch()}
	if d := FirstDifference(n.helloSettings(), h.Settings); d != "" {
		if rep.ConfigEpoch > 0 {
			d += fmt.Sprintf(" (the crawl's values since its config epoch %d, changed while it ran)", rep.ConfigEpoch)
		}
		rep.OK, rep.Diff = false, d
		n.refuse(h.Name, d)
		w.WriteHeader(http.StatusConflict)
	} else {
		n.agree(h.Name)
	}
	writeJSON(w, rep)
}

// FirstDifference compares two lists of cluster-wide settings (this
// agent's and a peer's) and names the first that differs ("" when they
// agree).
func FirstDifference(ours, theirs [][2]string) string {
	tm := map[string]string{}
	for _, s := range theirs {
		tm[s[0]] = s[1]
	}
	for _, s := range ours {
		v, ok := tm[s[0]]
		if !ok {
			return fmt.Sprintf("setting %s: the crawl has %q, the joining agent does not set it", s[0], s[1])
		}
		if v != s[1] {
			return fmt.Sprintf("setting %s: the crawl has %q, the joining agent %q", s[0], s[1], v)
		}
		delete(tm, s[0])
	}
	for _, s := range theirs {
		if _, ok := tm[s[0]]; ok {
			return fmt.Sprintf("setting %s: the crawl does not set it, the joining agent has %q", s[0], s[1])
		}
	}
	return ""
}

func (n *Node) serveView(w http.ResponseWriter, r *http.Request) {
	v := n.View()
	if v == nil {
		http.Error(w, "no view yet", http.StatusNotFound)
		return
	}
	if at := r.URL.Query().Get("at"); at != "" {
		n.serveViewAt(w, at) // viewhistory.go
		return
	}
	if r.URL.Query().Get("promised") == "1" {
		writeJSON(w, viewReply{View: v, Promised: n.promisedEpoch()}) // zombie.go
		return
	}
	writeJSON(w, v)
}

func (n *Node) serveFinish(w http.ResponseWriter, r *http.Request) {
	var f struct {
		By string `json:"by"`
	}
	json.NewDecoder(io.LimitReader(r.Body, maxControlBytes)).Decode(&f)
	if v := n.View(); !n.isReady() || v == nil || !v.Has(f.By) {
		http.Error(w, "not a member of this agent's view", http.StatusConflict)
		return
	}
	n.finish("announced by " + f.By)
	w.WriteHeader(http.StatusOK)
}

func (n *Node) serveStop(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Get("all") == "1" {
		for _, m := range n.aliveMembers() {
			if m.Name != n.cfg.Name && m.Meta.Exchange != "" {
				go n.client.post(context.Background(), m.Meta.Exchange, "/v1/stop", nil)
			}
		}
	}
	n.requestStop("petrel cluster stop")
	w.WriteHeader(http.StatusOK)
}

// Client calls the exchange of other agents.
type Client struct {
	hc *http.Client
	// absent, when set, is told of a reply saying that the responder's
	// view lists the caller absent (declared.go).
	absent func(addr string, epoch uint64)
}

// NewClient returns a client that authenticates with k.
func NewClient(k Key) (*Client, error) {
	tc, err := clientTLS(k)
	if err != nil {
		return nil, err
	}
	tr := &http.Transport{
		TLSClientConfig:     tc,
		ForceAttemptHTTP2:   true,
		MaxIdleConnsPerHost: 4,
		IdleConnTimeout:     time.Minute,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		TLSHandshakeTimeout: 5 * time.Second,
	}
	tr.Protocols = new(http.Protocols)
	tr.Protocols.SetHTTP2(true)
	return &Client{hc: &http.Client{Transport: tr, Timeout: 30 * time.Second}}, nil
}

// StatusError is a reply other than 200.
type StatusError struct {
	Code       int
	Body       string
	RetryAfter time.Duration
}

func (e *StatusError) Error() string { return fmt.Sprintf("HTTP %d: %s", e.Code, e.Body) }

func (c *Client) do(ctx context.Context, method, addr, path string, body []byte) ([]byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, "https://"+addr+path, rd)
	if err != nil {
		return nil, err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		var ce *tls.CertificateVerificationError
		if errors.As(err, &ce) || errors.Is(err, errWrongKey) {
			return nil, fmt.Errorf("%s: %w", addr, errWrongKey)
		}
		return nil, err
	}
	defer resp.Body.Close()
	if h := resp.Header.Get(absentHeader); h != "" && c.absent != nil {
		if e, err := strconv.ParseUint(h, 10, 64); err == nil {
			c.absent(addr, e)
		}
	}
	out, err := io.ReadAll(io.LimitReader(resp.Body, maxControlBytes))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		se := &StatusError{Code: resp.StatusCode, Body: string(bytes.TrimSpace(out))}
		if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil {
			se.RetryAfter = time.Duration(s) * time.Second
		}
		return out, se
	}
	return out, nil
}

func (c *Client) post(ctx context.Context, addr, path string, body []byte) ([]byte, error) {
	if body == nil {
		body = []byte{}
	}
	return c.do(ctx, http.MethodPost, addr, path, body)
}

// GetStatus asks the agent whose exchange is at addr for its Status.
func (c *Client) GetStatus(ctx context.Context, addr string) (*Status, error) {
	b, err := c.do(ctx, http.MethodGet, addr, "/v1/status", nil)
	if err != nil {
		return nil, err
	}
	var s Status
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// Stop asks the agent at addr to stop the whole crawl.
func (c *Client) Stop(ctx context.Context, addr string) error {
	_, err := c.post(ctx, addr, "/v1/stop?all=1", nil)
	return err
}

// SendBatch posts a batch's wire form to the exchange at addr.
func (c *Client) SendBatch(ctx context.Context, addr string, wire []byte) error {
	_, err := c.post(ctx, addr, "/v1/batch", wire)
	return err
}

// Close drops idle connections.
func (c *Client) Close() { c.hc.CloseIdleConnections() }
