package agent

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/petrel-crawler/petrel/internal/fetch"
	"github.com/petrel-crawler/petrel/internal/urlx"
)

// ErrNoSeeds is wrapped by the usage error of a crawl with no seed: none
// given, or a seeds file without a URL.
var ErrNoSeeds = errors.New("no seeds: give URLs, --seeds FILE, or --dir of a crawl to resume")

// readSeeds gathers the seeds from the file and the arguments. A seed line
// is one URL, with surrounding whitespace and a # comment trimmed; a
// malformed line is a usage error naming the file and line.
func readSeeds(cfg Config) ([]urlx.URL, error) {
	var out []urlx.URL
	add := func(where, raw string) error {
		u, err := parseSeed(raw)
		if err != nil {
			return usageErr("seed %s: %v", where, err)
		}
		out = append(out, u)
		return nil
	}
	if cfg.SeedsFile != "" {
		f, err := os.Open(cfg.SeedsFile)
		if err != nil {
			return nil, usageErr("--seeds: %v", err)
		}
		defer f.Close()
		err = seedLines(f, func(n int, line string) error {
			return add(fmt.Sprintf("%s:%d", cfg.SeedsFile, n), line)
		})
		if err != nil {
			if errors.Is(err, ErrUsage) {
				return nil, err
			}
			return nil, usageErr("--seeds %s: %v", cfg.SeedsFile, err)
		}
	}
	for _, s := range cfg.SeedURLs {
		if err := add("argument", strings.TrimSpace(s)); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// seedLines calls fn with each non-empty line of a seeds file, comments
// and surrounding whitespace removed, and its line number.
func seedLines(r io.Reader, fn func(n int, line string) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if i := strings.IndexByte(line, '#'); i >= 0 && (i == 0 || line[i-1] == ' ' || line[i-1] == '\t') {
			line = strings.TrimSpace(line[:i])
		}
		if line == "" {
			continue
		}
		if err := fn(n, line); err != nil {
			return err
		}
	}
	return sc.Err()
}

// parseSeed parses one seed URL, saying what is wrong in the crawl's words
// (once, without the parser's own wording).
func parseSeed(raw string) (urlx.URL, error) {
	if raw == "" {
		return urlx.URL{}, fmt.Errorf("empty URL")
	}
	if i := strings.IndexFunc(raw, func(r rune) bool { return r == ' ' || r == '\t' || r == '\v' || r == '\f' || r == '\r' }); i >= 0 {
		return urlx.URL{}, fmt.Errorf("%q holds whitespace: a seed is one URL (write a space in it as %%20)", raw)
	}
	scheme, _, ok := strings.Cut(raw, "://")
	if !ok {
		return urlx.URL{}, fmt.Errorf("%q is not an absolute URL: it lacks http:// or https://", raw)
	}
	if s := strings.ToLower(scheme); s != "http" && s != "https" {
		return urlx.URL{}, fmt.Errorf("%q: only http and https URLs are crawled", raw)
	}
	u, err := urlx.Parse(raw)
	switch {
	case errors.Is(err, urlx.ErrTooLong):
		return urlx.URL{}, fmt.Errorf("%q is too long", raw)
	case err != nil:
		return urlx.URL{}, fmt.Errorf("%q is not a valid URL (%s)", raw, parserReason(err))
	}
	return u, nil
}

// parserReason is the first clause of the URL parser's explanation,
// without the URL it repeats.
func parserReason(err error) string {
	s := err.Error()
	if i := strings.LastIndex(s, "Error: "); i >= 0 {
		s = s[i+len("Error: "):]
	} else if i := strings.LastIndex(s, ": "); i >= 0 {
		s = s[i+2:]
	}
	if i := strings.Index(s, " Url: "); i >= 0 {
		s = s[:i]
	}
	if i := strings.Index(s, ", because"); i >= 0 {
		s = s[:i]
	}
	s = strings.TrimSuffix(strings.TrimSpace(s), ".")
	if s == "" {
		return "unparsable"
	}
	return strings.ToLower(s[:1]) + s[1:]
}

// seedGuard reports, once per host on the progress writer, a seed whose
// address the address guard refuses, with the flag that permits it, and
// a seed whose host cannot be reached.
type seedGuard struct {
	guard fetch.Guard
	out   io.Writer // nil: say nothing

	mu       sync.Mutex
	hosts    map[string]string // seed host → a seed URL on it
	reported map[string]bool
	down     map[string]bool // seed hosts reported unreachable
}

func newSeedGuard(g fetch.Guard, out io.Writer, seeds []urlx.URL) *seedGuard {
	sg := &seedGuard{guard: g, out: out, hosts: map[string]string{}, reported: map[string]bool{}, down: map[string]bool{}}
	for _, s := range seeds {
		if _, ok := sg.hosts[s.Hostname()]; !ok {
			sg.hosts[s.Hostname()] = s.String()
		}
	}
	return sg
}

// check is called with a host's resolved addresses (by the DNS stage's
// workers, concurrently).
func (sg *seedGuard) check(host string, addrs []netip.Addr) {
	if sg == nil || sg.out == nil || len(addrs) == 0 {
		return
	}
	sg.mu.Lock()
	seed, isSeed := sg.hosts[host]
	done := sg.reported[host]
	sg.mu.Unlock()
	if !isSeed || done {
		return
	}
	addr := addrs[0] // the address the frontier dials: the first IPv4 one, else the first
	for _, a := range addrs {
		if a.Is4() || a.Is4In6() {
			addr = a.Unmap()
			break
		}
	}
	if sg.guard.Check(addr) == nil {
		return
	}
	sg.mu.Lock()
	defer sg.mu.Unlock()
	if sg.reported[host] {
		return
	}
	sg.reported[host] = true
	fmt.Fprintf(sg.out, "petrel: seed %s refused: its address %s is loopback, private or link-local (--allow-private permits it)\n", seed, addr)
}

// unreachable reports, once per seed host, that host could not be reached
// (err): its URLs wait, and are given up only if it stays unreachable for
// giveUp. It is said whenever the host first fails, even after the seed
// itself was fetched.
func (sg *seedGuard) unreachable(host string, err error, giveUp time.Duration) {
	if sg == nil || sg.out == nil {
		return
	}
	sg.mu.Lock()
	seed, isSeed := sg.hosts[host]
	done := sg.down[host]
	sg.down[host] = true
	sg.mu.Unlock()
	if isSeed && !done {
		fmt.Fprintf(sg.out, "petrel: seed %s: its host cannot be reached (%s); its URLs stay queued, tried again with a growing wait, and are given up only if it stays unreachable for --host-down-give-up %s\n",
			seed, fetch.Classify(err), giveUp)
	}
}
