package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Bounds of the API's inputs.
const (
	maxBody     = 1 << 20 // request body
	maxSeeds    = 10_000  // URLs of one POST /seeds
	maxBlock    = 10_000  // entries of one POST /blocklist
	callTimeout = 30 * time.Second
)

func (s *Server) routes(mux *http.ServeMux) {
	mux.HandleFunc("GET /{$}", s.page)
	mux.HandleFunc("GET /app.js", s.asset)
	mux.HandleFunc("GET /app.css", s.asset)
	mux.HandleFunc("GET /favicon.svg", s.asset)
	if s.opts.Metrics != nil {
		mux.Handle("GET /metrics", s.opts.Metrics)
	}
	const v1 = "/api/v1"
	mux.HandleFunc("POST "+v1+"/login", s.login)
	mux.HandleFunc("POST "+v1+"/ticket", s.ticket)
	mux.HandleFunc("GET "+v1+"/status", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, s.status(r.URL.Query().Get("history") == "1"))
	})
	mux.HandleFunc("POST "+v1+"/pause", s.action("pause", func(context.Context) error { return s.opts.Crawl.Pause() }))
	mux.HandleFunc("POST "+v1+"/resume", s.action("resume", func(context.Context) error { return s.opts.Crawl.Resume() }))
	mux.HandleFunc("POST "+v1+"/checkpoint", s.action("checkpoint", s.opts.Crawl.Checkpoint))
	mux.HandleFunc("POST "+v1+"/stop", s.action("stop", func(context.Context) error { s.opts.Crawl.Stop(); return nil }))
	mux.HandleFunc("POST "+v1+"/seeds", s.seeds)
	mux.HandleFunc("GET "+v1+"/config", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("describe") == "1" {
			writeJSON(w, http.StatusOK, s.opts.Crawl.DescribeSettings())
			return
		}
		writeJSON(w, http.StatusOK, s.opts.Crawl.Settings())
	})
	mux.HandleFunc("PATCH "+v1+"/config", s.patchConfig)
	mux.HandleFunc("GET "+v1+"/hosts", s.hosts)
	mux.HandleFunc("GET "+v1+"/hosts/{host...}", s.host)
	mux.HandleFunc("GET "+v1+"/why", s.why)
	mux.HandleFunc("POST "+v1+"/blocklist", s.block)
	mux.HandleFunc("GET "+v1+"/reports/{name}", s.report)
	mux.HandleFunc("GET "+v1+"/log", s.logStream)
	mux.HandleFunc(v1+"/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "console: no such call: "+r.Method+" "+r.URL.Path+" (see docs/api.md)")
	})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}

func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, map[string]string{"error": msg})
}

// readJSON decodes a bounded JSON body into v.
func readJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		writeError(w, http.StatusBadRequest, "console: request body: "+err.Error())
		return false
	}
	if dec.More() {
		writeError(w, http.StatusBadRequest, "console: request body: more than one JSON value")
		return false
	}
	return true
}

// action wraps a state-changing call without a body.
func (s *Server) action(name string, do func(context.Context) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), callTimeout)
		defer cancel()
		if err := do(ctx); err != nil {
			s.fail(w, err)
			return
		}
		s.log.Info("console: "+name, "remote", r.RemoteAddr)
		writeJSON(w, http.StatusOK, map[string]any{"ok": true, "state": s.opts.Crawl.State()})
	}
}

// fail answers an error of the crawl: 400 for ErrInvalid, 409 when the
// crawl is not in a state to do it, 500 otherwise.
func (s *Server) fail(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, ErrInvalid):
		writeError(w, http.StatusBadRequest, err.Error())
	case errors.Is(err, ErrState):
		writeError(w, http.StatusConflict, err.Error())
	case errors.Is(err, context.DeadlineExceeded):
		writeError(w, http.StatusServiceUnavailable, "console: the crawl did not answer in time: "+err.Error())
	default:
		writeError(w, http.StatusInternalServerError, err.Error())
	}
}

// ErrState marks a call the crawl cannot do in its present state (409).
var ErrState = errors.New("not now")

func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Code  string `json:"code"`
		Token string `json:"token"`
	}
	if !readJSON(w, r, &req) {
		return
	}
	switch {
	case req.Code != "":
		if tok, ok := s.gate.useCode(req.Code, time.Now()); ok {
			s.log.Info("console: login with the one-time code", "remote", r.RemoteAddr)
			writeJSON(w, http.StatusOK, map[string]string{"token": tok})
			return
		}
	case req.Token != "":
		if s.gate.tokenOK(req.Token) {
			writeJSON(w, http.StatusOK, map[string]string{"token": req.Token})
			return
		}
	}
	s.refusal.warn(time.Now(), "console: refused: login failed", "remote", r.RemoteAddr)
	writeError(w, http.StatusUnauthorized, "console: wrong or used code, or wrong token")
}

func (s *Server) ticket(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"ticket": s.gate.newTicket(time.Now()), "expires_in_s": ticketTTL.Seconds()})
}

func (s *Server) seeds(w http.ResponseWriter, r *http.Request) {
	var urls []string
	if strings.HasPrefix(r.Header.Get("Content-Type"), "text/plain") {
		b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
		if err != nil {
			writeError(w, http.StatusBadRequest, "console: request body: "+err.Error())
			return
		}
		for _, l := range strings.Split(string(b), "\n") {
			if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
				urls = append(urls, l)
			}
		}
	} else {
		var req struct {
			URLs []string `json:"urls"`
		}
		if !readJSON(w, r, &req) {
			return
		}
		urls = req.URLs
	}
	if len(urls) == 0 || len(urls) > maxSeeds {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("console: give between 1 and %d URLs", maxSeeds))
		return
	}
	res := s.opts.Crawl.AddSeeds(urls)
	n := 0
	for _, x := range res {
		if x.Accepted {
			n++
			s.opts.Tally.Seed(x.URL)
		}
	}
	s.log.Info("console: seeds added", "given", len(urls), "accepted", n, "remote", r.RemoteAddr)
	writeJSON(w, http.StatusOK, map[string]any{"accepted": n, "refused": len(res) - n, "results": res})
}

func (s *Server) patchConfig(w http.ResponseWriter, r *http.Request) {
	var changes map[string]any
	if !readJSON(w, r, &changes) {
		return
	}
	if len(changes) == 0 {
		writeError(w, http.StatusBadRequest, "console: no settings to change")
		return
	}
	for k, v := range changes {
		if n, ok := v.(json.Number); ok {
			if i, err := n.Int64(); err == nil {
				changes[k] = i
			} else if f, err := n.Float64(); err == nil {
				changes[k] = f
			}
		}
	}
	if err := s.opts.Crawl.Reconfigure(changes); err != nil {
		if !errors.Is(err, ErrState) && !errors.Is(err, ErrInvalid) {
			err = fmt.Errorf("%w: %v", ErrInvalid, err)
		}
		s.fail(w, err)
		return
	}
	s.log.Info("console: settings changed", "changes", changes, "remote", r.RemoteAddr)
	writeJSON(w, http.StatusOK, s.opts.Crawl.Settings())
}

func (s *Server) hosts(w http.ResponseWriter, r *http.Request) {
	q := HostQuery{Sort: r.URL.Query().Get("sort"), Limit: 50}
	if l := r.URL.Query().Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > 10_000 {
			writeError(w, http.StatusBadRequest, "console: limit must be between 1 and 10000")
			return
		}
		q.Limit = n
	}
	switch q.Sort {
	case "":
		q.Sort = "queued"
	case "queued", "fetched", "errors":
	default:
		writeError(w, http.StatusBadRequest, "console: sort must be queued, fetched or errors")
		return
	}
	list, err := s.hostList(r.Context(), q)
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, list)
}

// hostList merges what the frontier holds with what the tally counted.
func (s *Server) hostList(ctx context.Context, q HostQuery) ([]HostSummary, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	if q.Sort != "queued" {
		list := s.opts.Tally.topHosts(q.Sort, q.Limit)
		for i := range list {
			if d, ok, err := s.opts.Crawl.Host(ctx, list[i].Host); err == nil && ok {
				list[i].Queued, list[i].State = d.Queued, d.State
			}
		}
		return list, nil
	}
	list, err := s.opts.Crawl.Hosts(ctx, q)
	if err != nil {
		return nil, err
	}
	for i := range list {
		s.opts.Tally.host(&list[i])
	}
	return list, nil
}

func (s *Server) host(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), callTimeout)
	defer cancel()
	name := r.PathValue("host")
	d, ok, err := s.opts.Crawl.Host(ctx, name)
	if err != nil {
		s.fail(w, err)
		return
	}
	if !ok {
		writeError(w, http.StatusNotFound, "console: the crawl holds nothing of host "+name)
		return
	}
	if errs := s.opts.Tally.host(&d.HostSummary); len(errs) > 0 {
		d.LastErrors = errs
	}
	writeJSON(w, http.StatusOK, d)
}

func (s *Server) why(w http.ResponseWriter, r *http.Request) {
	u := r.URL.Query().Get("url")
	if u == "" {
		writeError(w, http.StatusBadRequest, "console: give ?url=URL")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 2*callTimeout)
	defer cancel()
	ans, err := s.opts.Crawl.Why(ctx, u)
	if err != nil {
		s.fail(w, err)
		return
	}
	if wantText(r) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, ans.Text())
		return
	}
	writeJSON(w, http.StatusOK, ans)
}

func (s *Server) block(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Entries []string `json:"entries"`
	}
	if !readJSON(w, r, &req) {
		return
	}
	if len(req.Entries) == 0 || len(req.Entries) > maxBlock {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("console: give between 1 and %d entries", maxBlock))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), callTimeout)
	defer cancel()
	res, err := s.opts.Crawl.Block(ctx, req.Entries)
	if err != nil {
		s.fail(w, err)
		return
	}
	s.log.Info("console: blocked", "entries", req.Entries, "dropped", res.Dropped, "remote", r.RemoteAddr)
	writeJSON(w, http.StatusOK, res)
}

// wantText reports whether the caller asked for text (?format=text or an
// Accept header preferring text/plain).
func wantText(r *http.Request) bool {
	if f := r.URL.Query().Get("format"); f != "" {
		return f == "text"
	}
	return strings.HasPrefix(r.Header.Get("Accept"), "text/plain")
}
