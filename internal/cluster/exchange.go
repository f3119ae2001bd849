package cluster

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/petrel-crawler/petrel/internal/netcap"
)

// The exchange is HTTP/2 over mutually authenticated TLS (see tls.go):
// one connection per peer pair carries every batch, acknowledgement and
// control call, multiplexed, with HTTP/2's flow control. Endpoints:
//
//	POST /v1/batch   a batch's wire form; 200 once it is durable in the
//	                 inbox (or was already applied), 503 with Retry-After
//	                 when the inbox is full or the agent is stopping,
//	                 503 without one for a batch of ready URLs routed
//	                 under a view the agent has not installed yet,
//	                 409 with Petrel-View: E for a batch routed under a
//	                 view older than the receiver's fence E (fence.go),
//	                 400 for a malformed batch
//	POST /v1/handoff ?from&epoch&seq: a part of a hand-off (handoff.go);
//	                 200 once the host applied it, 409 with Petrel-View
//	                 for a part cut under a view older than the fence
//	GET  /v1/status  the agent's Status
//	GET  /v1/why     ?url=U: what the agent knows of U (why.go)
//
// A batch's and a part's answers are the Transport's (transport.go), as
// HTTP statuses. Membership, views, settings, the stop and the end are
// not here: they live in etcd (coordination.go).

const maxControlBytes = 1 << 20

// MaxExchangeConns bounds the connections the exchange serves at once:
// one per peer agent (HTTP/2 multiplexes its calls), and the commands
// that ask for a status or a "why". Past it a new connection is closed at
// once, counted and logged (netcap); the agent's descriptor budget counts
// them (agent/fdlimit.go).
const MaxExchangeConns = 1024

// httpTransport is the exchange over HTTP/2 and mutual TLS: the agent's
// Transport unless its Config names another.
type httpTransport struct {
	key     Key
	addr    string       // the exchange's address
	control http.Handler // the endpoints other than a batch's and a part's
	client  *Client
	log     *slog.Logger
	server  *http.Server
	ln      *netcap.Listener
}

func newHTTPTransport(cfg Config, client *Client, control http.Handler, log *slog.Logger) *httpTransport {
	return &httpTransport{key: cfg.Key, addr: cfg.ExchangeAddr(), control: control, client: client, log: log}
}

// Listen starts the exchange's HTTP/2 server.
func (t *httpTransport) Listen(r Receiver) error {
	tc, err := serverTLS(t.key)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", t.addr)
	if err != nil {
		return fmt.Errorf("cluster: exchange on %s: %w", t.addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/batch", func(w http.ResponseWriter, req *http.Request) { serveBatch(w, req, r) })
	mux.HandleFunc("POST /v1/handoff", func(w http.ResponseWriter, req *http.Request) { serveHandoff(w, req, r) })
	mux.Handle("/", t.control)
	t.server = &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(t.log.Handler(), slog.LevelDebug),
		Protocols:         new(http.Protocols),
	}
	t.server.Protocols.SetHTTP2(true)
	t.ln = netcap.Limit(ln, MaxExchangeConns, "cluster: exchange", t.log)
	go t.server.Serve(tls.NewListener(t.ln, tc))
	return nil
}

// Refused is the number of connections closed past MaxExchangeConns.
func (t *httpTransport) Refused() int64 {
	if t.ln == nil {
		return 0
	}
	return t.ln.Refused()
}

// Close stops the server, giving the calls under way a second.
func (t *httpTransport) Close() error {
	if t.server == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return t.server.Shutdown(ctx)
}

// SendBatch posts a batch to to's exchange.
func (t *httpTransport) SendBatch(ctx context.Context, to Peer, wire []byte) error {
	return t.client.SendBatch(ctx, to.Addr, wire)
}

// SendHandoff posts a part to to's exchange.
func (t *httpTransport) SendHandoff(ctx context.Context, to Peer, h *Handoff) error {
	q := url.Values{"from": {h.From}, "epoch": {strconv.FormatUint(h.Epoch, 10)}, "seq": {strconv.FormatUint(h.Seq, 10)}}
	_, err := t.client.do(ctx, http.MethodPost, to.Addr, "/v1/handoff?"+q.Encode(), encodeHandoff(h))
	return err
}

// controlHandler serves the endpoints other than a batch's and a part's.
func (n *Node) controlHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/status", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, n.Status()) })
	mux.HandleFunc("GET /v1/why", n.serveWhy)
	return mux
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

// writeAnswer writes a receiver's answer (Transport) as an HTTP reply.
func writeAnswer(w http.ResponseWriter, err error) {
	if err == nil {
		w.WriteHeader(http.StatusOK)
		return
	}
	var se *StatusError
	errors.As(asStatus(err), &se)
	if se.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(max(se.RetryAfter.Round(time.Second), time.Second)/time.Second)))
	}
	if se.View > 0 {
		w.Header().Set(viewHeader, strconv.FormatUint(se.View, 10))
	}
	http.Error(w, se.Body, se.Code)
}

// viewHeader carries a refusal's fence epoch (StatusError.View).
const viewHeader = "Petrel-View"

func serveBatch(w http.ResponseWriter, req *http.Request, r Receiver) {
	body, err := readBatchBody(w, req)
	if err != nil {
		http.Error(w, "batch too large or cut", http.StatusBadRequest)
		return
	}
	writeAnswer(w, r.ReceiveBatch(body))
}

func serveHandoff(w http.ResponseWriter, req *http.Request, r Receiver) {
	q := req.URL.Query()
	from := q.Get("from")
	epoch, err1 := strconv.ParseUint(q.Get("epoch"), 10, 64)
	seq, err2 := strconv.ParseUint(q.Get("seq"), 10, 64)
	body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, MaxHandoffBytes))
	if err != nil || err1 != nil || err2 != nil || from == "" {
		http.Error(w, "bad hand-off", http.StatusBadRequest)
		return
	}
	h, err := decodeHandoff(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	h.From, h.Epoch, h.Seq = from, epoch, seq
	writeAnswer(w, r.ReceiveHandoff(h))
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

// do calls path on the exchange at addr, with body unless it is nil.
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
		se.View, _ = strconv.ParseUint(resp.Header.Get(viewHeader), 10, 64)
		return out, se
	}
	return out, nil
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
	_, err := c.do(ctx, http.MethodPost, addr, "/v1/batch", wire)
	return err
}

// Close drops idle connections.
func (c *Client) Close() { c.hc.CloseIdleConnections() }
