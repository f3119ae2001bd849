package benchcrawl

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// progressRE matches the start of Petrel's progress line and of the Colly
// crawler's: "pages N (R/s)".
var progressRE = regexp.MustCompile(`^pages (\d+) \(`)

// parseProgress returns the page count of a progress line.
func parseProgress(line string) (int64, bool) {
	m := progressRE.FindStringSubmatch(line)
	if m == nil {
		return 0, false
	}
	n, err := strconv.ParseInt(m[1], 10, 64)
	return n, err == nil
}

// finishedRE matches Petrel's summary line "crawl finished in 19.259s",
// also when a reason follows ("crawl finished in 19.259s: --max-urls N
// reached").
var finishedRE = regexp.MustCompile(`crawl finished in ([^\s:]+)`)

// parseFinished returns the elapsed time of Petrel's summary line.
func parseFinished(line string) (time.Duration, bool) {
	m := finishedRE.FindStringSubmatch(line)
	if m == nil {
		return 0, false
	}
	d, err := time.ParseDuration(m[1])
	return d, err == nil
}

// linkShareRE matches the web's first line: "…, cross-host links 34.2 % of 1234; …".
var linkShareRE = regexp.MustCompile(`cross-host links ([0-9.]+) % of`)

// parseLinkShare returns the cross-host share of the links (0 to 1) that
// "petrel testweb" states in its first line.
func parseLinkShare(line string) (float64, bool) {
	m := linkShareRE.FindStringSubmatch(line)
	if m == nil {
		return 0, false
	}
	v, err := strconv.ParseFloat(m[1], 64)
	return v / 100, err == nil
}

// wgetKind classifies one line of wget --no-verbose output.
type wgetKind int

const (
	wgetOther  wgetKind = iota
	wgetPage            // a page saved
	wgetRobots          // a robots.txt fetched
	wgetError           // an HTTP error response (e.g. 404): a page fetched, not saved
)

var wgetErrorRE = regexp.MustCompile(` ERROR [1-5][0-9][0-9]: `)

// classifyWget classifies a line of wget --no-verbose output, such as
//
//	2026-11-30 04:07:09 URL:http://h0.test:8080/ [20580/20580] -> "d/h0.test:8080/index.html" [1]
func classifyWget(line string) wgetKind {
	if i := strings.Index(line, " URL:"); i >= 0 && strings.Contains(line, " -> ") {
		rest := line[i+len(" URL:"):]
		u, _, _ := strings.Cut(rest, " ")
		if strings.HasSuffix(u, "/robots.txt") {
			return wgetRobots
		}
		return wgetPage
	}
	if wgetErrorRE.MatchString(line) {
		return wgetError
	}
	return wgetOther
}

// wrkRate returns the "Requests/sec:" figure and the count of non-2xx/3xx
// responses from wrk's output.
func wrkRate(out string) (rate float64, non2xx int64, err error) {
	found := false
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(l, "Requests/sec:"):
			rate, err = strconv.ParseFloat(strings.TrimSpace(strings.TrimPrefix(l, "Requests/sec:")), 64)
			if err != nil {
				return 0, 0, fmt.Errorf("benchcrawl: wrk output: %w", err)
			}
			found = true
		case strings.HasPrefix(l, "Non-2xx or 3xx responses:"):
			non2xx, _ = strconv.ParseInt(strings.TrimSpace(strings.TrimPrefix(l, "Non-2xx or 3xx responses:")), 10, 64)
		}
	}
	if !found {
		return 0, 0, errors.New("benchcrawl: wrk output: no Requests/sec line")
	}
	return rate, non2xx, nil
}

// hostsFile is the synthetic web's hosts file: addresses in order of first
// appearance and the names on each.
type hostsFile struct {
	addrs []string
	names map[string][]string // address -> names
	ipOf  map[string]string   // lower-case name -> address
}

// parseHosts parses "IP name [name...]" lines.
func parseHosts(r io.Reader) (*hostsFile, error) {
	h := &hostsFile{names: make(map[string][]string), ipOf: make(map[string]string)}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		fs := strings.Fields(line)
		if len(fs) < 2 {
			continue
		}
		ip := fs[0]
		if _, ok := h.names[ip]; !ok {
			h.addrs = append(h.addrs, ip)
		}
		for _, n := range fs[1:] {
			n = strings.ToLower(n)
			if _, dup := h.ipOf[n]; dup {
				continue
			}
			h.names[ip] = append(h.names[ip], n)
			h.ipOf[n] = ip
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("benchcrawl: hosts file: %w", err)
	}
	return h, nil
}

// readSeeds returns the URLs of a seeds file (no blanks, no # comments).
func readSeeds(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("benchcrawl: seeds: %w", err)
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		l = strings.TrimSpace(l)
		if l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out, nil
}

// portsByAddr maps each address of h to the port its seeds use ("80" when
// the URL has none); addresses without a seed are absent.
func portsByAddr(h *hostsFile, seeds []string) map[string]string {
	m := make(map[string]string)
	for _, s := range seeds {
		u, err := url.Parse(s)
		if err != nil {
			continue
		}
		ip, ok := h.ipOf[strings.ToLower(u.Hostname())]
		if !ok {
			continue
		}
		p := u.Port()
		if p == "" {
			p = "80"
		}
		m[ip] = p
	}
	return m
}

// allowedRate is the page rate the politeness delays allow on the web of
// h: on each address, requests are spaced by at least ipDelay, and each of
// the n hosts on it by at least hostDelay, so the address serves at most
// min(1/ipDelay, n/hostDelay) requests per second (response times, a few
// milliseconds here, are neglected, which makes the bound generous). The
// web's rate is the sum over its addresses. A zero delay bounds nothing;
// with both zero the result is +Inf.
func allowedRate(h *hostsFile, hostDelay, ipDelay time.Duration) float64 {
	total := 0.0
	for _, ip := range h.addrs {
		n := float64(len(h.names[ip]))
		r := inf
		if ipDelay > 0 {
			r = 1 / ipDelay.Seconds()
		}
		if hostDelay > 0 {
			r = min(r, n/hostDelay.Seconds())
		}
		total += r
	}
	return total
}

// readStats reads Petrel's state/stats.json.
func readStats(path string) (map[string]int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("benchcrawl: stats: %w", err)
	}
	m := make(map[string]int64)
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("benchcrawl: stats %s: %w", path, err)
	}
	return m, nil
}

// countWARCPages counts the response and revisit records of every
// *.warc.gz file in dir whose target is not a robots.txt: the pages Petrel
// stored, one record each.
func countWARCPages(dir string) (int64, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.warc.gz"))
	if err != nil {
		return 0, fmt.Errorf("benchcrawl: count WARC: %w", err)
	}
	sort.Strings(files)
	var n int64
	for _, f := range files {
		c, err := countWARCFile(f)
		n += c
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

func countWARCFile(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("benchcrawl: count WARC: %w", err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(bufio.NewReaderSize(f, 1<<16))
	if err != nil {
		if errors.Is(err, io.EOF) {
			return 0, nil
		}
		return 0, fmt.Errorf("benchcrawl: count WARC %s: %w", path, err)
	}
	defer zr.Close()
	return countWARCRecords(zr)
}

// countWARCRecords scans a WARC stream for record headers. A record is a
// page when its WARC-Type is response or revisit and its WARC-Target-URI
// does not end in /robots.txt. Header lines are recognised only in record
// headers (after a "WARC/1." line, up to the blank line).
func countWARCRecords(r io.Reader) (int64, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	var n int64
	inHeader := false
	var typ, target string
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A long body line: skip the rest of it.
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = br.ReadSlice('\n')
			}
			inHeader = false
			if err == nil {
				continue
			}
		}
		if len(line) > 0 {
			t := bytes.TrimRight(line, "\r\n")
			switch {
			case !inHeader && bytes.HasPrefix(t, []byte("WARC/1.")):
				inHeader, typ, target = true, "", ""
			case inHeader && len(t) == 0:
				inHeader = false
				if (typ == "response" || typ == "revisit") && !strings.HasSuffix(target, "/robots.txt") {
					n++
				}
			case inHeader:
				k, v, ok := bytes.Cut(t, []byte(":"))
				if ok {
					switch string(k) {
					case "WARC-Type":
						typ = string(bytes.TrimSpace(v))
					case "WARC-Target-URI":
						target = strings.Trim(string(bytes.TrimSpace(v)), "<>")
					}
				}
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return n, nil
			}
			return n, fmt.Errorf("benchcrawl: count WARC: %w", err)
		}
	}
}

// dirBytes returns the total size of the regular files under dir.
func dirBytes(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}
