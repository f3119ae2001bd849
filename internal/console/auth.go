package console

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// tokenBytes is the entropy of a generated token.
const tokenBytes = 32

// minTokenLen is the shortest token a token file may hold.
const minTokenLen = 16

// LoadToken returns the bearer token kept in path, creating the file (mode
// 0600, its directory if need be) with a random token when it does not
// exist. A file that exists is refused, on one line, when its group or
// others may read it, or when it holds fewer than minTokenLen characters:
// the token is the console's only credential.
func LoadToken(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err == nil {
		return checkToken(path, b)
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("console: token file: %w", err)
	}
	tok := randomHex(tokenBytes)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", fmt.Errorf("console: token file: %w", err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return LoadToken(path) // created meanwhile by another process
	}
	if err != nil {
		return "", fmt.Errorf("console: token file: %w", err)
	}
	_, err = fmt.Fprintln(f, tok)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return "", fmt.Errorf("console: token file: %w", err)
	}
	return tok, nil
}

// checkToken returns the token of the file path holding b, or why it is
// refused.
func checkToken(path string, b []byte) (string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("console: token file: %w", err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("console: token file %s: mode %#o lets others read the token; chmod 600 it", path, st.Mode().Perm())
	}
	tok := strings.TrimSpace(string(b))
	switch {
	case tok == "":
		return "", fmt.Errorf("console: token file %s is empty", path)
	case len(tok) < minTokenLen:
		return "", fmt.Errorf("console: token file %s: a %d-character token is too easy to guess; want at least %d characters (delete the file to have one made)", path, len(tok), minTokenLen)
	}
	return tok, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

// ticketTTL is how long an event-stream ticket or a one-time login code
// may wait for its use.
const (
	ticketTTL  = 30 * time.Second
	maxTickets = 64 // outstanding tickets; the oldest is forgotten beyond it
)

// gate decides who may do what: the Host check, the bearer token, the
// single-use tickets of the event stream and the one-time login code.
type gate struct {
	token    string
	addr     string          // the console's address
	hosts    map[string]bool // Host header values accepted
	loopback bool            // bound to a loopback address: reads need no token

	mu      sync.Mutex
	tickets map[string]time.Time // ticket → expiry
	code    string               // one-time login code ("" once used)
	codeExp time.Time
}

func newGate(token string, bound net.Addr) *gate {
	tcp, _ := bound.(*net.TCPAddr)
	g := &gate{token: token, addr: bound.String(), hosts: map[string]bool{bound.String(): true}, tickets: map[string]time.Time{}}
	if tcp != nil {
		g.loopback = tcp.IP.IsLoopback()
		port := fmt.Sprint(tcp.Port)
		if g.loopback {
			// Browsers name loopback "localhost" too; a page of another
			// origin cannot make a name resolve to loopback and carry this
			// Host, since the name is not its own.
			g.hosts["localhost:"+port] = true
		}
		if tcp.IP.To4() == nil {
			g.hosts["["+tcp.IP.String()+"]:"+port] = true
		}
	}
	g.code = randomHex(16)
	g.codeExp = time.Now().Add(10 * time.Minute)
	return g
}

// hostOK reports whether the request's Host header names the console.
func (g *gate) hostOK(r *http.Request) bool { return g.hosts[strings.ToLower(r.Host)] }

// bearer reports whether the request carries the token.
func (g *gate) bearer(r *http.Request) bool {
	h := r.Header.Get("Authorization")
	const p = "Bearer "
	if len(h) <= len(p) || !strings.EqualFold(h[:len(p)], p) {
		return false
	}
	return g.tokenOK(strings.TrimSpace(h[len(p):]))
}

func (g *gate) tokenOK(tok string) bool {
	return subtle.ConstantTimeCompare([]byte(tok), []byte(g.token)) == 1
}

// needsToken reports whether a request must carry the token (or, for the
// event stream, a ticket): every request off loopback; on loopback every
// change, and the event stream, which holds a connection open.
func needsToken(r *http.Request, loopback bool) bool {
	if !loopback || (r.Method != http.MethodGet && r.Method != http.MethodHead) {
		return true
	}
	return r.URL.Path == "/api/v1/log" && r.URL.Query().Get("follow") == "1"
}

// newTicket returns a single-use ticket for the event stream.
func (g *gate) newTicket(now time.Time) string {
	t := randomHex(16)
	g.mu.Lock()
	defer g.mu.Unlock()
	for k, exp := range g.tickets {
		if now.After(exp) {
			delete(g.tickets, k)
		}
	}
	if len(g.tickets) >= maxTickets {
		var oldest string
		for k, exp := range g.tickets {
			if oldest == "" || exp.Before(g.tickets[oldest]) {
				oldest = k
			}
		}
		delete(g.tickets, oldest)
	}
	g.tickets[t] = now.Add(ticketTTL)
	return t
}

// useTicket consumes a ticket, reporting whether it was valid.
func (g *gate) useTicket(t string, now time.Time) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	exp, ok := g.tickets[t]
	delete(g.tickets, t)
	return ok && !now.After(exp)
}

// useCode consumes the one-time login code, returning the token when it
// matches.
func (g *gate) useCode(c string, now time.Time) (string, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.code == "" || now.After(g.codeExp) || subtle.ConstantTimeCompare([]byte(c), []byte(g.code)) != 1 {
		return "", false
	}
	g.code = ""
	return g.token, true
}

// loginCode returns the one-time code (for the link printed at start).
func (g *gate) loginCode() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.code
}
