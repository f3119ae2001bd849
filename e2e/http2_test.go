package e2e

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/base32"
	"errors"
	"html"
	"io"
	"net/netip"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	gowarc "github.com/nlnwa/gowarc/v3"

	"github.com/petrel-crawler/petrel/internal/store"
	"github.com/petrel-crawler/petrel/internal/testweb"
)

// TestCrawlHTTP2 crawls a small web of the real shape, where 40 % of the
// HTTPS hosts offer HTTP/2 by ALPN, and judges it from the web's own log
// and the WARC files: every page of an h2 host is fetched over HTTP/2 (no
// other host is), one request at a time per host and per address with
// the delays between them; the summary counts the HTTP/2 connections and
// streams; every response of an h2 host is stored with WARC-Protocol h2
// and its TLS version, in HTTP/1.1 form with a Content-Length that states
// the body stored (gowarc reads it and checks its digests; warcio.js
// indexes it when present). With --http2=false the same web is fetched
// over HTTP/1.1 only.
func TestCrawlHTTP2(t *testing.T) {
	t.Parallel() // judges protocols, records and gaps at least the delays
	const hostDelay, ipDelay = 20 * time.Millisecond, 5 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	delays := []string{"--host-delay", hostDelay.String(), "--ip-delay", ipDelay.String(), "--retries", "1", "--retry-delay", "100ms"}
	cfg := testweb.GenConfig{Hosts: 16, PagesPerHost: 4, Seed: 10} // no slow host, 7 offering h2
	var on, off *realCrawl
	var wg sync.WaitGroup
	wg.Go(func() {
		c := cfg
		c.FirstIP = netip.MustParseAddr("127.98.0.1")
		on = crawlRealWeb(t, ctx, c, delays...)
	})
	wg.Go(func() {
		c := cfg
		c.FirstIP = netip.MustParseAddr("127.98.1.1")
		off = crawlRealWeb(t, ctx, c, append(delays, "--http2=false")...)
	})
	wg.Wait()
	if on.err != nil || off.err != nil {
		return
	}

	g := on.web.Gen()
	hits := on.web.Hits()
	h2Pages := map[string]bool{}        // host and path of the pages answered 200 over HTTP/2
	h2Hits, h2Cut := int64(0), int64(0) // requests over HTTP/2, and those the crawler gave up
	for _, hit := range hits {
		offers := g.OffersHTTP2(hit.Host)
		if hit.Proto == "HTTP/2.0" {
			h2Hits++
			if hit.Cut {
				h2Cut++
			}
			if !offers {
				t.Errorf("%s%s fetched over HTTP/2 from a host that does not offer it", hit.Host, hit.Path)
			}
		}
		if offers && hit.Status == 200 && !hit.Cut {
			if hit.Proto != "HTTP/2.0" {
				t.Errorf("%s%s fetched over %s from a host offering h2", hit.Host, hit.Path, hit.Proto)
			} else if hit.Path != "/robots.txt" {
				h2Pages[key(hit.Host, hit.Path)] = true
			}
		}
	}
	if len(h2Pages) < 5 {
		t.Fatalf("only %d pages answered over HTTP/2: not a useful test", len(h2Pages))
	}
	// A host's http:// and https:// URLs share its politeness key (an
	// http:// request to an HTTPS host is answered 301): every request to
	// a host keeps the host's delay, to an address the address's.
	t.Logf("%d pages over HTTP/2 of %d requests", len(h2Pages), len(hits))
	checkPoliteness(t, on.dir, hits, hostDelay, ipDelay)
	st := readStats(t, on.dir)
	// A stream counts with its response: one given up before its headers
	// has none.
	if st["H2Streams"] > h2Hits || st["H2Streams"] < h2Hits-h2Cut || st["H2Conns"] == 0 || st["H2Conns"] >= st["H2Streams"] {
		t.Errorf("stats: HTTP/2 connections %d, streams %d; want streams = the web's %d HTTP/2 requests (less up to the %d given up), fewer connections (kept)",
			st["H2Conns"], st["H2Streams"], h2Hits, h2Cut)
	}
	checkH2WARC(t, filepath.Join(on.dir, "warc"), h2Pages)

	for _, hit := range off.web.Hits() {
		if hit.Proto != "HTTP/1.1" {
			t.Errorf("--http2=false: %s%s fetched over %q", hit.Host, hit.Path, hit.Proto)
		}
	}
	if st := readStats(t, off.dir); st["H2Streams"] != 0 || st["Fetched"] < int64(len(h2Pages)) {
		t.Errorf("--http2=false: %d HTTP/2 streams counted, %d pages fetched", st["H2Streams"], st["Fetched"])
	}
}

// checkH2WARC reads the WARC files of dir with gowarc: every page of
// pages has a response (or revisit) record with WARC-Protocol h2 then its
// TLS version, and a request record with them; a response record over
// HTTP/2 reads as HTTP/1.1 with a Content-Length equal to its payload's
// length; the digests verify. warcio.js, when present, indexes the files
// with the same protocol fields.
func checkH2WARC(t *testing.T, dir string, pages map[string]bool) {
	t.Helper()
	stored := map[string]bool{}
	var requests, responses int
	eachWARCRecord(t, dir, func(f string, rec gowarc.Record) {
		wr := rec.WarcRecord
		for _, v := range rec.Validation {
			t.Errorf("%s offset %d: %v", f, rec.Offset, v)
		}
		h := wr.WarcHeader()
		protos := h.GetAll("WARC-Protocol")
		if len(protos) == 0 || protos[0] != "h2" {
			return
		}
		if len(protos) != 2 || !strings.HasPrefix(protos[1], "tls/1.") {
			t.Errorf("%s offset %d: WARC-Protocol %q, want h2 then the TLS version", f, rec.Offset, protos)
		}
		switch wr.Type() {
		case gowarc.Request:
			requests++
		case gowarc.Revisit:
			responses++
			stored[urlKey(t, h.Get(gowarc.WarcTargetURI))] = true
		case gowarc.Response:
			responses++
			stored[urlKey(t, h.Get(gowarc.WarcTargetURI))] = true
			blk, ok := wr.Block().(gowarc.HttpResponseBlock)
			if !ok {
				t.Errorf("%s offset %d: response block is a %T", f, rec.Offset, wr.Block())
				return
			}
			pr, err := blk.PayloadBytes()
			if err != nil {
				t.Fatal(err)
			}
			sum := sha1.New()
			n, err := io.Copy(sum, pr)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := h.Get(gowarc.WarcPayloadDigest), "sha1:"+base32.StdEncoding.EncodeToString(sum.Sum(nil)); got != want {
				t.Errorf("%s offset %d: WARC-Payload-Digest %s, payload hashes to %s", f, rec.Offset, got, want)
			}
			if cl := blk.HttpHeader().Get("Content-Length"); cl != strconv.FormatInt(n, 10) {
				t.Errorf("%s offset %d: Content-Length %q, payload %d bytes", f, rec.Offset, cl, n)
			}
		}
	})
	for p := range pages {
		if !stored[p] {
			t.Errorf("%s: fetched over HTTP/2, no response record with WARC-Protocol h2", p)
		}
	}
	if requests != responses {
		t.Errorf("%d request records over HTTP/2, %d responses", requests, responses)
	}
	checkWarcioProtocols(t, dir, responses)
}

// checkWarcioProtocols indexes the WARC files of dir with warcio.js, when
// present, and wants h2 responses records in its index.
func checkWarcioProtocols(t *testing.T, dir string, want int) {
	t.Helper()
	warcio := store.WarcioPath()
	if warcio == "" {
		t.Log("warcio not found, not read with it: npm install warcio@2.4.11 and set PETREL_WARCIO")
		return
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.warc.gz"))
	out, err := exec.Command(warcio, append(append([]string{"index"}, files...), "-f", "warc-type", "warc-protocol", "http:status")...).Output()
	if err != nil {
		var ee *exec.ExitError
		errors.As(err, &ee)
		t.Fatalf("warcio index: %v\n%s", err, ee.Stderr)
	}
	got := 0
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, `"warc-type":"response"`) && strings.Contains(l, `"warc-protocol":"h2`) {
			got++
		}
	}
	t.Logf("warcio indexes %d HTTP/2 response records of %d", got, want)
	if got == 0 || got > want {
		t.Errorf("warcio indexes %d HTTP/2 response records, want up to %d and some:\n%.2000s", got, want, out)
	}
}

// TestReplayHTTP2 crawls a small web of the real shape with --http2,
// packages the crawl as a WACZ and replays two pages its h2 hosts served
// over HTTP/2 in ReplayWeb.page in headless Chromium: their titles appear
// in the replay frame (the records in HTTP/1.1 form replay as any other).
func TestReplayHTTP2(t *testing.T) {
	chromium, replayDir := replayTools(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r := crawlRealWeb(t, ctx, testweb.GenConfig{Hosts: 16, PagesPerHost: 4, Seed: 10, FirstIP: netip.MustParseAddr("127.98.2.1")},
		"--host-delay", "20ms", "--ip-delay", "5ms")
	if r.err != nil {
		return
	}
	g := r.web.Gen()
	type page struct{ url, title string }
	var pages []page
	for _, hit := range r.web.Hits() {
		if hit.Proto != "HTTP/2.0" || hit.Status != 200 || hit.Path == "/robots.txt" || len(pages) == 2 {
			continue
		}
		h, err := g.Host(hit.Host)
		if err != nil {
			continue
		}
		p, err := g.Page(h, hit.Path)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		g.Render(&b, h, p)
		title, _, _ := strings.Cut(string(b.Bytes()[bytes.Index(b.Bytes(), []byte("<title>"))+len("<title>"):]), "</title>")
		pages = append(pages, page{g.URL(h, p), html.UnescapeString(title)})
	}
	if len(pages) < 2 {
		t.Fatalf("%d pages served over HTTP/2: not a useful test", len(pages))
	}
	wacz := filepath.Join(t.TempDir(), "h2.wacz")
	if out, errOut, code := petrelOut(t, "warc", "wacz", r.dir, "-o", wacz); code != 0 {
		t.Fatalf("warc wacz: exit %d: %s%s", code, out, errOut)
	}
	base := serveReplay(t, replayDir, map[string]string{"h2.wacz": wacz})
	bctx := replayBrowser(t, ctx, chromium)
	for _, p := range pages {
		replayPage(t, bctx, p.url, base+"/?wacz=h2.wacz&url="+p.url, p.url, p.title, nil)
	}
}
