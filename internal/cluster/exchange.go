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
//	GET  /v1/view    the agent's ownership view (404 before it has one)
//	GET  /v1/config  the config epoch and the values changed under it
//	POST /v1/handoff ?from&epoch&seq: a part of a hand-off (handoff.go);
//	                 200 once the host applied it
//	GET  /v1/status  the agent's Status
//	GET  /v1/why     ?url=U: what the agent knows of U (why.go)
//
// Membership, views, settings, the stop and the end are not here: they
// live in etcd (coordination.go).

const maxControlBytes = 1 << 20

func (n *Node) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/batch", n.serveBatch)
	mux.HandleFunc("GET /v1/view", n.serveView)
	mux.HandleFunc("GET /v1/config", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, n.Config()) })
	mux.HandleFunc("POST /v1/handoff", n.serveHandoff)
	mux.HandleFunc("GET /v1/status", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, n.Status()) })
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

func (n *Node) serveView(w http.ResponseWriter, r *http.Request) {
	v := n.View()
	if v == nil {
		http.Error(w, "no view yet", http.StatusNotFound)
		return
	}
	writeJSON(w, v)
}

// Client calls the exchange of other agents.
type Client struct {
	hc *http.Client
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

// SendBatch posts a batch's wire form to the exchange at addr.
func (c *Client) SendBatch(ctx context.Context, addr string, wire []byte) error {
	_, err := c.post(ctx, addr, "/v1/batch", wire)
	return err
}

// Close drops idle connections.
func (c *Client) Close() { c.hc.CloseIdleConnections() }
