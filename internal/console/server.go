package console

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/petrel-crawler/petrel/internal/clock"
	"github.com/petrel-crawler/petrel/internal/netcap"
)

// Options configures a Server.
type Options struct {
	// Addr is the IP:PORT to bind, exactly (port 0: any free port).
	Addr string
	// Token is the bearer token (see LoadToken).
	Token string
	Crawl Crawl
	// Metrics, when set, is served at /metrics (with the same access rules
	// as the API's reads).
	Metrics http.Handler
	// Log is the crawl log the event stream follows (nil: an empty one).
	Log *LogHub
	// Tally holds the figures of the reports (nil: an empty one).
	Tally  *Tally
	Logger *slog.Logger
	// SampleEvery is the interval of the rate history (default 5s; an
	// hour of samples is kept).
	SampleEvery time.Duration
	// MaxConns is the most connections open at once (default MaxConns);
	// one past it is closed at once and counted (ConnsRefused).
	MaxConns int
}

// Server is one agent's console. Create it with Listen, run it with Serve.
type Server struct {
	opts    Options
	ln      *netcap.Listener
	gate    *gate
	refusal *refusalLog
	hist    *History
	log     *slog.Logger
	started time.Time
	srv     *http.Server
	refused atomic.Int64  // calls refused: wrong Host, no token
	closing chan struct{} // closed when the server shuts down: event streams end
}

// Refused is the number of calls refused (a wrong Host, no valid token).
func (s *Server) Refused() int64 { return s.refused.Load() }

// ConnsRefused is the number of connections closed as soon as accepted,
// for passing Options.MaxConns.
func (s *Server) ConnsRefused() int64 { return s.ln.Refused() }

// MaxConns is the most connections the console holds open at once (its
// Options.MaxConns by default): a browser opens a handful, the event
// stream one more. The agent counts them in the descriptor budget.
const MaxConns = 64

// Listen binds the console's address. The address must be an IP literal
// and a port: a name would let the console bind whatever it resolves to.
func Listen(opts Options) (*Server, error) {
	ap, err := netip.ParseAddrPort(opts.Addr)
	if err != nil {
		return nil, fmt.Errorf("console: address %q: want IP:PORT (e.g. 127.0.0.1:8080)", opts.Addr)
	}
	if opts.Token == "" {
		return nil, errors.New("console: no token")
	}
	inner, err := net.Listen("tcp", ap.String())
	if err != nil {
		return nil, fmt.Errorf("console: %w", err)
	}
	if opts.MaxConns <= 0 {
		opts.MaxConns = MaxConns
	}
	if opts.Log == nil {
		opts.Log = NewLogHub(1)
	}
	if opts.Tally == nil {
		opts.Tally = NewTally()
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opts.SampleEvery <= 0 {
		opts.SampleEvery = 5 * time.Second
	}
	refusal := &refusalLog{log: opts.Logger}
	ln := netcap.Limit(inner, opts.MaxConns, "console", opts.Logger)
	s := &Server{
		opts:    opts,
		ln:      ln,
		refusal: refusal,
		gate:    newGate(opts.Token, ln.Addr()),
		hist:    NewHistory(int(time.Hour / opts.SampleEvery)),
		log:     opts.Logger,
		started: time.Now(),
		closing: make(chan struct{}),
	}
	s.srv = &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    16 << 10,
		ErrorLog:          slog.NewLogLogger(opts.Logger.Handler(), slog.LevelWarn),
	}
	s.srv.RegisterOnShutdown(func() { close(s.closing) })
	return s, nil
}

// Addr is the address the console listens on.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// URL is the console's address as a URL.
func (s *Server) URL() string { return "http://" + s.Addr() + "/" }

// LoginURL is a link that logs the first browser to open it in: it holds a
// one-time code (not the token), in the fragment, so that it reaches no
// server log; the page exchanges it for the token.
func (s *Server) LoginURL() string { return s.URL() + "#code=" + s.gate.loginCode() }

// Serve answers requests and samples the rates until ctx is done, then
// closes the listener and the open connections (event streams included).
func (s *Server) Serve(ctx context.Context) error {
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		s.sample(ctx)
	}()
	errc := make(chan error, 1)
	go func() { errc <- s.srv.Serve(s.ln) }()
	var err error
	select {
	case <-ctx.Done():
		shut, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		s.srv.Shutdown(shut) // ends the event streams (closing)
		cancel()
		s.srv.Close()
		err = <-errc
	case err = <-errc:
	}
	<-sampled
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// Close closes the listener of a server that is not serving.
func (s *Server) Close() error { return s.ln.Close() }

func (s *Server) sample(ctx context.Context) {
	observe := func() { s.hist.Observe(time.Now(), s.opts.Crawl.Counters()) }
	observe()
	clock.Every(ctx, s.opts.SampleEvery, observe)
}

// Handler returns the console's handler, with its access rules.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	s.routes(mux)
	return s.guard(mux)
}

// public reports whether a path is the page shell, served without a token.
func public(path string) bool {
	switch path {
	case "/", "/app.js", "/app.css", "/favicon.svg":
		return true
	}
	return false
}

// guard applies the Host check and the token rules before any handler.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.gate.hostOK(r) {
			s.refused.Add(1)
			s.refusal.warn(time.Now(), "console: refused: Host is not the console's address", "host", r.Host, "remote", r.RemoteAddr, "path", r.URL.Path)
			writeError(w, http.StatusForbidden, "console: Host header must be "+s.gate.addr)
			return
		}
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-store")
		if public(r.URL.Path) {
			h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'")
			next.ServeHTTP(w, r)
			return
		}
		// The login call checks a code or the token itself.
		login := r.Method == http.MethodPost && r.URL.Path == "/api/v1/login"
		if !login && needsToken(r, s.gate.loopback) && !s.streamTicket(r) && !s.gate.bearer(r) {
			s.refused.Add(1)
			s.refusal.warn(time.Now(), "console: refused: no valid token", "method", r.Method, "path", r.URL.Path, "remote", r.RemoteAddr)
			h.Set("WWW-Authenticate", `Bearer realm="petrel"`)
			writeError(w, http.StatusUnauthorized, "console: this call needs Authorization: Bearer TOKEN (the token is in the console's token file)")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// streamTicket consumes the ticket of an event-stream request.
func (s *Server) streamTicket(r *http.Request) bool {
	if r.Method != http.MethodGet || r.URL.Path != "/api/v1/log" {
		return false
	}
	t := r.URL.Query().Get("ticket")
	return t != "" && s.gate.useTicket(t, time.Now())
}
