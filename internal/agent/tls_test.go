package agent

import (
	"compress/gzip"
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/petrel-crawler/petrel/internal/fetch"
)

// TestTLSVerify crawls a loopback https server whose certificate is
// self-signed and made out to another name: with --tls-verify record (the
// default) its pages are fetched and their response records say why the
// certificate did not verify, with the TLS version and cipher suite; with
// strict nothing is fetched and the refusals are counted; with --ca-file
// naming its certificate it verifies (the name aside, which it does not
// cover: httptest's certificate is for example.com, so the host is named
// example.com here).
func TestTLSVerify(t *testing.T) {
	srv := httptest.NewUnstartedServer(twoPages("secure"))
	ln, err := net.Listen("tcp", "127.91.2.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv.Listener = ln
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes
	srv.StartTLS()
	defer srv.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	dir := t.TempDir()
	hosts := filepath.Join(dir, "hosts")
	if err := os.WriteFile(hosts, []byte("127.91.2.1 example.com\n127.91.2.1 secure.test\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ca := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	crawl := func(name, host, mode, caFile string) (*Agent, string) {
		a := smallCrawl(t, filepath.Join(dir, name), hosts, fmt.Sprintf("https://%s:%d/", host, port), func(cfg *Config) {
			cfg.Fetch.TLSVerify, cfg.Fetch.CAFile = mode, caFile
			cfg.Frontier.RetryDelay, cfg.Frontier.MaxRetries = time.Millisecond, 1
		})
		return a, warcText(t, filepath.Join(dir, name, "warc"))
	}

	a, warc := crawl("record", "secure.test", "record", "")
	// Three responses each time: robots.txt (404) and the two pages.
	if n := a.stats.Fetched.Load(); n != 2 || a.stats.TLSUnverified.Load() != 3 {
		t.Errorf("record: fetched %d, unverified %d; want 2, 3", n, a.stats.TLSUnverified.Load())
	}
	// One connection, kept alive: one full handshake, two reuses.
	if o, r, full, res := a.stats.ConnsOpened.Load(), a.stats.ConnsReused.Load(), a.stats.TLSFull.Load(), a.stats.TLSResumed.Load(); o != 1 || r != 2 || full != 1 || res != 0 {
		t.Errorf("record: connections opened %d, reused %d, handshakes full %d, resumed %d; want 1, 2, 1, 0", o, r, full, res)
	}
	for _, h := range []string{"WARC-Protocol: tls/1.3\r\n", "WARC-Cipher-Suite: TLS_", "Petrel-TLS-Verify: failed: x509: "} {
		if strings.Count(warc, h) != 3 {
			t.Errorf("record: %q in %d records, want 3", h, strings.Count(warc, h))
		}
	}
	if log, err := os.ReadFile(filepath.Join(dir, "record", "logs", "crawl.log")); err != nil ||
		strings.Count(string(log), "tls:unverified:hostname") != 3 {
		t.Errorf("record: crawl.log has %d tls:unverified:hostname notes, want 3 (%v):\n%s",
			strings.Count(string(log), "tls:unverified:hostname"), err, log)
	}
	a, _ = crawl("strict", "secure.test", "strict", "")
	if a.stats.Fetched.Load() != 0 || a.stats.TLSRefused.Load() == 0 {
		t.Errorf("strict: fetched %d, refused %d", a.stats.Fetched.Load(), a.stats.TLSRefused.Load())
	}
	a, warc = crawl("ca", "example.com", "strict", ca)
	if a.stats.Fetched.Load() != 2 || a.stats.TLSVerified.Load() != 3 || strings.Count(warc, "Petrel-TLS-Verify: verified\r\n") != 3 {
		t.Errorf("strict with --ca-file: fetched %d, verified %d", a.stats.Fetched.Load(), a.stats.TLSVerified.Load())
	}
	if _, err := fetch.LoadRoots(ca); err != nil {
		t.Fatal(err)
	}
}

// twoPages serves a site of two pages, "/" (titled title) linking to
// "/next.html", and no robots.txt.
func twoPages(title string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		switch r.URL.Path {
		case "/robots.txt":
			http.NotFound(w, r)
		case "/":
			fmt.Fprintf(w, `<title>%s</title><a href=/next.html>next</a>`, title)
		default:
			fmt.Fprint(w, `<title>next</title>`)
		}
	}
}

// smallCrawl crawls from seed into dir with the hosts file hosts, fast
// delays and small buffers, edit changing the settings, and returns the
// agent after the crawl.
func smallCrawl(t *testing.T, dir, hosts, seed string, edit func(*Config)) *Agent {
	t.Helper()
	cfg := Defaults()
	cfg.Dir = dir
	cfg.SeedURLs = []string{seed}
	cfg.Fetch.HostsFile, cfg.Fetch.AllowPrivate, cfg.Fetch.SystemDNS = hosts, true, false
	cfg.Frontier.HostDelay, cfg.Frontier.IPDelay = time.Millisecond, time.Millisecond
	cfg.Fetchers, cfg.Parsers, cfg.CheckpointEvery = 4, 2, 0
	cfg.Frontier.WorkbenchBytes, cfg.Sieve.URLCacheBytes, cfg.Sieve.BufferKeys = 16<<20, 1<<20, 1<<12
	edit(&cfg)
	a, err := Open(cfg, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// A crawl that fetched nothing fails with ErrNoSeedFetched: the
	// callers check what was fetched.
	if err := a.Run(ctx); err != nil && !(errors.Is(err, ErrNoSeedFetched) && a.stats.Fetched.Load() == 0) {
		t.Fatal(err)
	}
	return a
}

// warcText returns the decompressed WARC files of dir, concatenated.
func warcText(t *testing.T, dir string) string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*.warc.gz"))
	var b strings.Builder
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		zr, err := gzip.NewReader(fh)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(&b, zr); err != nil {
			t.Fatal(err)
		}
		fh.Close()
	}
	return b.String()
}
