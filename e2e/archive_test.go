package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	gowarc "github.com/nlnwa/gowarc/v3"

	"github.com/petrel-crawler/petrel/internal/store"
)

// archiveSiteHost is the archive site's name (in the crawl's hosts file).
const archiveSiteHost = "archive-site.test"

// archivePNG is a 1×1 PNG.
var archivePNG = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89" +
	"\x00\x00\x00\rIDATx\x9cc\xf8\x0f\x00\x00\x01\x01\x00\x05\x18\xd8N\x00\x00\x00\x00IEND\xaeB`\x82")

// archiveSite is a small site whose pages have titles and requisites (an
// image, a style sheet with a background image, a script), plus two pages
// that are cut short: one by a connection reset, one by a clean close
// before its Content-Length. Requisites are also linked, so they are
// crawled whether or not the crawler fetches embeds.
type archiveSite struct {
	srv  *http.Server
	addr string // host:port of the listener
	mu   sync.Mutex
	hits map[string]int
}

// archivePages are the site's HTML pages and their titles.
var archivePages = map[string]string{
	"/":           "Archive site home",
	"/about.html": "About the archive site",
	"/dup.html":   "Archive site home", // same bytes as "/": a revisit
}

// archiveAboutETag is the ETag of the archive site's /about.html.
const archiveAboutETag = `"about-1"`

func startArchiveSite(t *testing.T) *archiveSite {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &archiveSite{addr: ln.Addr().String(), hits: map[string]int{}}
	page := func(title string) string {
		return `<!DOCTYPE html><html><head><meta charset="utf-8"><title>` + title + `</title>` +
			`<link rel="stylesheet" href="/style.css"><script src="/app.js"></script></head>` +
			`<body><h1>` + title + `</h1><img src="/img/logo.png" alt="logo">` +
			`<p><a href="/about.html">about</a> <a href="/dup.html">again</a> <a href="/reset.html">reset</a> <a href="/short.html">short</a></p>` +
			`<p><a href="/style.css">css</a> <a href="/app.js">js</a> <a href="/img/logo.png">png</a> <a href="/img/bg.png">bg</a></p>` +
			`</body></html>`
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.hits[r.URL.Path]++
		s.mu.Unlock()
		switch r.URL.Path {
		case "/", "/dup.html":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, page(archivePages["/"]))
		case "/about.html": // with a validator: a revisit crawl gets 304s
			w.Header().Set("ETag", archiveAboutETag)
			if r.Header.Get("If-None-Match") == archiveAboutETag {
				w.WriteHeader(http.StatusNotModified)
				return
			}
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, page(archivePages["/about.html"]))
		case "/style.css":
			w.Header().Set("Content-Type", "text/css")
			fmt.Fprint(w, "body { background: url(img/bg.png) }\nh1 { color: #123 }\n")
		case "/app.js":
			w.Header().Set("Content-Type", "application/javascript")
			fmt.Fprint(w, "document.documentElement.dataset.js = 'ran';\n")
		case "/img/logo.png", "/img/bg.png":
			w.Header().Set("Content-Type", "image/png")
			w.Write(archivePNG)
		case "/robots.txt":
			fmt.Fprint(w, "User-agent: *\nAllow: /\n")
		case "/reset.html", "/short.html":
			conn, bw, err := http.NewResponseController(w).Hijack()
			if err != nil {
				return
			}
			body := strings.Repeat("<p>cut short</p>\n", 400)
			fmt.Fprintf(bw, "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\n\r\n%s", 10*len(body), body)
			bw.Flush()
			if tc, ok := conn.(*net.TCPConn); ok && r.URL.Path == "/reset.html" {
				tc.SetLinger(0) // Close sends RST
			}
			conn.Close()
		default:
			http.NotFound(w, r)
		}
	})
	s.srv = &http.Server{Handler: mux}
	go s.srv.Serve(ln)
	t.Cleanup(func() { s.srv.Close() })
	return s
}

// url returns the site's URL of path.
func (s *archiveSite) url(path string) string {
	_, port, _ := net.SplitHostPort(s.addr)
	return "http://" + archiveSiteHost + ":" + port + path
}

// crawlArchiveSite crawls the site into a new directory and returns it.
func crawlArchiveSite(t *testing.T, s *archiveSite, extra ...string) string {
	t.Helper()
	tmp := t.TempDir()
	hosts := filepath.Join(tmp, "hosts")
	if err := os.WriteFile(hosts, []byte("127.0.0.1 "+archiveSiteHost+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(tmp, "crawl")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	args := append([]string{"crawl", "--dir", dir, "--hosts", hosts, "--allow-private", "--system-dns=false",
		"--host-delay", "5ms", "--ip-delay", "5ms", "--retries", "2", "--retry-delay", "20ms",
		"--operator", "Archive test <ops@example.test>", "--progress", "0"}, extra...)
	args = append(args, s.url("/"))
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, petrel, args...)
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("petrel crawl: %v\n%s", err, stderr.String())
	}
	return dir
}

// petrelOut runs petrel and returns its stdout, stderr and exit code.
func petrelOut(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(petrel, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return stdout.String(), stderr.String(), code
}

// TestArchiveFidelity crawls a site with two pages cut short (a reset, and
// a clean close before the Content-Length) and checks the WARC files: each
// try of a cut page is a response record with WARC-Truncated, none is a
// revisit, and the revisit of a whole page names the capture it repeats.
func TestArchiveFidelity(t *testing.T) {
	s := startArchiveSite(t)
	dir := crawlArchiveSite(t, s)
	tries := map[string]int{}
	revisits := 0
	eachWARCRecord(t, filepath.Join(dir, "warc"), func(f string, rec gowarc.Record) {
		h := rec.WarcRecord.WarcHeader()
		uri := h.Get(gowarc.WarcTargetURI)
		path := strings.TrimPrefix(uri, s.url(""))
		switch rec.WarcRecord.Type() {
		case gowarc.Warcinfo:
			var block bytes.Buffer
			if r, err := rec.WarcRecord.Block().RawBytes(); err == nil {
				block.ReadFrom(r)
			}
			for _, want := range []string{"operator: Archive test <ops@example.test>\r\n", "isPartOf: crawl\r\n",
				"robots: obey\r\n", "http-header-user-agent: Petrel/", "software: Petrel/", "format: WARC File Format 1.1\r\n"} {
				if !strings.Contains(block.String(), want) {
					t.Errorf("warcinfo lacks %q:\n%s", want, block.String())
				}
			}
		case gowarc.Response:
			if path == "/reset.html" || path == "/short.html" {
				tries[path]++
				if tr := h.Get(gowarc.WarcTruncated); tr != "disconnect" {
					t.Errorf("%s: WARC-Truncated %q; want disconnect", path, tr)
				}
			} else if tr := h.Get(gowarc.WarcTruncated); tr != "" {
				t.Errorf("%s: WARC-Truncated %q on a whole capture", path, tr)
			}
		case gowarc.Revisit:
			revisits++
			if path == "/reset.html" || path == "/short.html" {
				t.Errorf("%s: a truncated capture stored as a revisit", path)
			}
			if h.Get(gowarc.WarcRefersToTargetURI) == "" || h.Get(gowarc.WarcRefersToDate) == "" || h.Get(gowarc.WarcRefersTo) == "" {
				t.Errorf("%s: revisit without WARC-Refers-To, -Target-URI or -Date", path)
			}
		}
	})
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range []string{"/reset.html", "/short.html"} {
		if tries[p] != s.hits[p] || tries[p] != 3 {
			t.Errorf("%s: %d response records for %d requests; want 3 of each (1 + 2 retries)", p, tries[p], s.hits[p])
		}
	}
	if revisits != 2 {
		t.Errorf("%d revisit records; want 2 (/dup.html, /img/bg.png)", revisits)
	}
}

// TestArchiveTools crawls the site and looks at it with the warc commands:
// the crawl's indexes/index.cdxj equals warcio's cdx-index of its files
// after sorting, and warc cdxj, index, ls and cat agree with it.
func TestArchiveTools(t *testing.T) {
	s := startArchiveSite(t)
	dir := crawlArchiveSite(t, s)
	merged, err := os.ReadFile(store.MergedIndex(dir))
	if err != nil {
		t.Fatalf("the crawl wrote no merged index: %v", err)
	}
	lines := strings.Split(strings.TrimSuffix(string(merged), "\n"), "\n")
	if !slices.IsSorted(lines) || len(lines) < 8 {
		t.Errorf("indexes/index.cdxj: %d lines, sorted %v", len(lines), slices.IsSorted(lines))
	}
	out, _, code := petrelOut(t, "warc", "cdxj", filepath.Join(dir, "warc"))
	if code != 0 || out != string(merged) {
		t.Errorf("warc cdxj DIR (exit %d) differs from indexes/index.cdxj:\n%s\n%s", code, out, merged)
	}
	os.Remove(store.MergedIndex(dir))
	if out, errOut, code := petrelOut(t, "warc", "index", dir); code != 0 || !strings.Contains(out, "captures indexed") {
		t.Errorf("warc index: exit %d: %s%s", code, out, errOut)
	}
	if again, _ := os.ReadFile(store.MergedIndex(dir)); !bytes.Equal(again, merged) {
		t.Error("warc index wrote another index than the crawl")
	}

	if warcio := store.WarcioPath(); warcio == "" {
		if os.Getenv("PETREL_REQUIRE_BROWSER") == "1" {
			t.Error("warcio not found: set PETREL_WARCIO (npm install warcio@2.4.11)")
		} else {
			t.Log("warcio not found, index not compared: npm install warcio@2.4.11 and set PETREL_WARCIO to node_modules/.bin/warcio")
		}
	} else {
		files, _ := filepath.Glob(filepath.Join(dir, "warc", "*.warc.gz"))
		wout, err := exec.Command(warcio, append([]string{"cdx-index"}, files...)...).Output()
		if err != nil {
			t.Fatalf("warcio cdx-index: %v", err)
		}
		wl := strings.Split(strings.TrimSpace(string(wout)), "\n")
		slices.Sort(wl)
		if got := strings.Join(wl, "\n") + "\n"; got != string(merged) {
			t.Errorf("indexes/index.cdxj differs from warcio cdx-index:\n%s\nwarcio:\n%s", merged, got)
		}
	}

	out, _, code = petrelOut(t, "warc", "ls", "--json", filepath.Join(dir, "warc"))
	statuses := map[string]int{}
	var about store.RecordInfo
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var ri store.RecordInfo
		if err := json.Unmarshal([]byte(l), &ri); err != nil {
			t.Fatalf("warc ls --json line %q: %v", l, err)
		}
		if ri.Type == "response" {
			statuses[strings.TrimPrefix(ri.URL, s.url(""))] = ri.Status
			if strings.HasSuffix(ri.URL, "/about.html") {
				about = ri
			}
		}
	}
	at := fmt.Sprintf("%s:%d", filepath.Join(dir, "warc", about.File), about.Offset)
	if rec, _, code := petrelOut(t, "warc", "cat", at); code != 0 || !strings.Contains(rec, "WARC-Target-URI: "+s.url("/about.html")+"\r\n") {
		t.Errorf("warc cat %s: exit %d %q", at, code, rec)
	}
	if body, _, code := petrelOut(t, "warc", "cat", "--body", at); code != 0 || !strings.Contains(body, "<title>About the archive site</title>") {
		t.Errorf("warc cat --body %s: exit %d %q", at, code, body)
	}
	if code != 0 || statuses["/about.html"] != 200 || statuses["/missing"] != 0 {
		t.Errorf("warc ls --json: exit %d, statuses %v", code, statuses)
	}
	out, _, _ = petrelOut(t, "warc", "ls", filepath.Join(dir, "warc"))
	if !strings.HasPrefix(out, "OFFSET ") || !strings.Contains(out, " 200 ") {
		t.Errorf("warc ls: no header or no status:\n%s", out)
	}

	body, errOut, code := petrelOut(t, "warc", "cat", "--body", "--dir", dir, s.url("/dup.html"))
	if code != 0 || !strings.Contains(body, "<title>Archive site home</title>") {
		t.Errorf("warc cat --body of a revisit: exit %d %q %s", code, body, errOut)
	}
	rec, _, code := petrelOut(t, "warc", "cat", "--dir", dir, s.url("/about.html"))
	if code != 0 || !strings.HasPrefix(rec, "WARC/1.1\r\nWARC-Type: response\r\n") {
		t.Errorf("warc cat: exit %d %q", code, rec)
	}
	_, errOut, code = petrelOut(t, "warc", "cat", "--dir", dir, s.url("/never.html"))
	if code != 1 || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "not in the archive") {
		t.Errorf("warc cat of a URL not archived: exit %d, stderr %q; want 1 and one line", code, errOut)
	}
}
