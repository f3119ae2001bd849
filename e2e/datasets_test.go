package e2e

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	gowarc "github.com/nlnwa/gowarc/v3"

	"github.com/petrel-crawler/petrel/internal/agent"
	"github.com/petrel-crawler/petrel/internal/crawllog"
	"github.com/petrel-crawler/petrel/internal/dataset"
	"github.com/petrel-crawler/petrel/internal/lang"
	"github.com/petrel-crawler/petrel/internal/parse"
	"github.com/petrel-crawler/petrel/internal/store"
	"github.com/petrel-crawler/petrel/internal/testweb"
	"github.com/petrel-crawler/petrel/internal/urlx"
)

// duckdbScript queries a Parquet file with DuckDB (npm @duckdb/node-api):
// captures by registered domain and by status, one HTML page's location,
// and the column types.
const duckdbScript = `
const { DuckDBInstance } = require('@duckdb/node-api');
(async () => {
  const con = await (await DuckDBInstance.create(':memory:')).connect();
  const f = "read_parquet('" + process.argv[2].replace(/'/g, "''") + "')";
  const q = async (sql) => (await con.runAndReadAll(sql)).getRowObjectsJson();
  console.log(JSON.stringify({
    domains: await q('SELECT url_host_registered_domain AS k, count(*)::INTEGER AS n FROM ' + f + ' GROUP BY 1'),
    statuses: await q('SELECT fetch_status::VARCHAR AS k, count(*)::INTEGER AS n FROM ' + f + ' GROUP BY 1'),
    page: (await q("SELECT url, warc_filename, warc_record_offset, warc_record_length FROM " + f +
      " WHERE fetch_status = 200 AND content_mime_type = 'text/html' AND content_simhash IS NOT NULL ORDER BY url LIMIT 1"))[0],
    types: await q('SELECT column_name AS k, column_type AS n FROM (DESCRIBE SELECT * FROM ' + f + ')'),
  }));
})().catch((e) => { console.error(e); process.exit(1); });
`

// TestDatasets crawls with --wat --wet --cc-index --languages and small
// WARC files (so that several are closed during the crawl), then reads
// every output back: the WAT and WET files with gowarc and warcio, the
// Parquet index with parquet-go and DuckDB, against the WARC files and
// the crawl log; and the languages of the CDXJ index and the crawl log.
func TestDatasets(t *testing.T) {
	t.Parallel() // judges records and indexes, not timing
	r := startWeb(t, testweb.Config{Hosts: 8, HostsPerIP: 4, PagesPerHost: 12, Seed: 11, FirstIP: netip.MustParseAddr("127.157.0.1")})
	if err := r.crawl(t, 2*time.Minute, "--host-delay", "10ms", "--ip-delay", "5ms", "--warc-max-bytes", "64KiB",
		"--wat", "--wet", "--cc-index", "--languages"); err != nil {
		t.Fatalf("petrel crawl: %v\n%s", err, r.stderr.String())
	}
	warcs, err := store.WARCFiles([]string{r.dir})
	if err != nil || len(warcs) < 2 {
		t.Fatalf("%d WARC files (%v): want several", len(warcs), err)
	}
	index := dataset.CrawlIndex(r.dir)
	rows, err := dataset.ReadRows(index)
	if err != nil {
		t.Fatal(err)
	}
	parsed := map[string]int{} // by warc_filename: pages with a SimHash, which have a WET record
	for _, row := range rows {
		if row.ContentSimHash != nil {
			parsed[row.WARCFilename]++
		}
	}
	var warcBytes, derivedBytes int64
	var wats, wets []string
	htmlPages, watRecords := 0, 0
	for _, w := range warcs {
		records := 0
		eachRecord(t, w, func(*gowarc.WarcFields, []byte) { records++ })
		pages := parsed["warc/"+filepath.Base(w)]
		htmlPages += pages
		wat, wet := checkDerived(t, dataset.WATName(w), "metadata"), checkDerived(t, dataset.WETName(w), "conversion")
		if wat != records || wet != pages {
			t.Errorf("%s: %d WAT records for %d WARC records, %d WET records for %d HTML pages in the index", w, wat, records, wet, pages)
		}
		for _, p := range []string{w, dataset.WATName(w), dataset.WETName(w)} {
			fi, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			if p == w {
				warcBytes += fi.Size()
			} else {
				derivedBytes += fi.Size()
			}
		}
		wats, wets = append(wats, dataset.WATName(w)), append(wets, dataset.WETName(w))
		watRecords += records + 1
	}
	checkWarcio(t, wats, watRecords)
	checkWarcio(t, wets, -1)
	checkLanguages(t, wets, rows)
	t.Logf("%d WARC files, %d bytes; WAT+WET %d bytes (%.0f %%); %d HTML pages", len(warcs), warcBytes, derivedBytes,
		100*float64(derivedBytes)/float64(warcBytes), htmlPages)
	if htmlPages < 50 {
		t.Fatalf("only %d HTML pages crawled", htmlPages)
	}

	domains, statuses := crawlLogCounts(t, r.dir)
	n := 0
	for _, c := range statuses {
		n += c
	}
	if len(rows) != n {
		t.Errorf("%d rows in %s, %d stored captures in the crawl log", len(rows), index, n)
	}
	checkDuckDB(t, r.dir, index, domains, statuses)
	checkCDXJLanguages(t, r.dir)
}

// checkCDXJLanguages checks the languages of the pages found as they were
// fetched (--languages): each 200 HTML page's line of indexes/index.cdxj
// has the languages package lang finds in the text of its stored payload
// (its title, then the first agent.MaxLanguageText bytes of its visible
// text), and its crawl.log line's lang: annotation says the same.
func checkCDXJLanguages(t *testing.T, dir string) {
	t.Helper()
	logged := map[string]string{}
	for _, l := range readLines(t, filepath.Join(dir, "logs", "crawl.log")) {
		if line, err := crawllog.Parse(l); err == nil {
			if _, ok := line.Annotation("warc"); ok {
				logged[line.URL] = line.Languages()
			}
		}
	}
	arc, err := store.OpenArchive(dir)
	if err != nil {
		t.Fatal(err)
	}
	pages, named := 0, 0
	for _, l := range readLines(t, store.MergedIndex(dir)) {
		_, js, _ := strings.Cut(strings.SplitN(l, " ", 2)[1], " ")
		var f struct{ URL, Mime, Status, Offset, Filename, Languages string }
		if err := json.Unmarshal([]byte(js), &f); err != nil {
			t.Fatalf("%s: %v", l, err)
		}
		if f.Status != "200" || !strings.HasPrefix(f.Mime, "text/html") {
			continue
		}
		off, _ := strconv.ParseInt(f.Offset, 10, 64)
		p, err := arc.ReadPayload(filepath.Join(dir, "warc", f.Filename), off)
		if err != nil {
			t.Fatal(err)
		}
		base, _ := urlx.Parse(f.URL)
		res := parse.HTML(base, p.Header, p.Body, parse.Options{MaxText: agent.MaxLanguageText})
		text := string(res.Text)
		if res.Title != "" {
			text = res.Title + "\n" + text
		}
		pages++
		if want := lang.Codes(lang.Detect(text)); f.Languages != want || logged[f.URL] != want {
			t.Errorf("%s: CDXJ languages %q, crawl.log's %q; its text's %q", f.URL, f.Languages, logged[f.URL], want)
		}
		if f.Languages != "" {
			named++
		}
	}
	t.Logf("%d of %d HTML pages in the CDXJ index name languages", named, pages)
	if named == 0 {
		t.Errorf("none of %d HTML pages in the CDXJ index names a language", pages)
	}
}

// eachRecord calls fn with the header and block of each record of the
// WARC file path, read by gowarc, and checks its block digest.
func eachRecord(t *testing.T, path string, fn func(*gowarc.WarcFields, []byte)) {
	t.Helper()
	rd, err := gowarc.NewWarcFileReader(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	for {
		rec, err := rd.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		h := rec.WarcRecord.WarcHeader()
		b, _ := rec.WarcRecord.Block().RawBytes()
		block, _ := io.ReadAll(b)
		rec.Close()
		if d := h.Get("WARC-Block-Digest"); d != "" && d != store.SHA1Digest(block) && strings.Contains(path, ".wa") {
			t.Errorf("%s: offset %d: WARC-Block-Digest %s, block's %s", path, rec.Offset, d, store.SHA1Digest(block))
		}
		fn(h, block)
	}
}

// checkDerived reads a WAT or WET file and returns its records of type
// typ, each checked: after a warcinfo record, a WARC-Refers-To and a block
// of the right kind.
func checkDerived(t *testing.T, path, typ string) int {
	t.Helper()
	n := 0
	eachRecord(t, path, func(h *gowarc.WarcFields, block []byte) {
		switch h.Get("WARC-Type") {
		case "warcinfo":
			if n > 0 {
				t.Errorf("%s: warcinfo record after the first", path)
			}
			return
		case typ:
		default:
			t.Errorf("%s: a %s record", path, h.Get("WARC-Type"))
			return
		}
		n++
		if h.Get("WARC-Refers-To") == "" {
			t.Errorf("%s: record %d without WARC-Refers-To", path, n)
		}
		if typ == "metadata" {
			var m struct {
				Envelope struct {
					WARCHeader map[string]any `json:"WARC-Header-Metadata"`
					Payload    map[string]any `json:"Payload-Metadata"`
				}
			}
			if err := json.Unmarshal(block, &m); err != nil || m.Envelope.WARCHeader["WARC-Record-ID"] != h.Get("WARC-Refers-To") || m.Envelope.Payload == nil {
				t.Errorf("%s: record %d: %v %.200s", path, n, err, block)
			}
		} else if h.Get("Content-Type") != "text/plain" || len(block) == 0 {
			t.Errorf("%s: record %d: %s, %d bytes", path, n, h.Get("Content-Type"), len(block))
		}
	})
	return n
}

// checkLanguages checks the languages of the pages: each WET record's
// WARC-Identified-Content-Language is the content_languages of its page's
// index row (one detection for both), and each is well formed: one to
// three ISO 639-3 codes, comma-separated. (The test web's text is made of
// invented words: which languages it is taken for is not judged here,
// only that some are found.)
func checkLanguages(t *testing.T, wets []string, rows []dataset.Row) {
	t.Helper()
	code := regexp.MustCompile(`^[a-z]{3}(,[a-z]{3}){0,2}$`)
	byURL := map[string]string{}
	for _, row := range rows {
		if row.ContentSimHash != nil {
			byURL[row.URL] = row.ContentLanguages
		}
		if l := row.ContentLanguages; l != "" && !code.MatchString(l) {
			t.Errorf("%s: content_languages %q", row.URL, l)
		}
	}
	texts, named := 0, 0
	for _, p := range wets {
		eachRecord(t, p, func(h *gowarc.WarcFields, _ []byte) {
			if h.Get("WARC-Type") != "conversion" {
				return
			}
			texts++
			u, l := h.Get("WARC-Target-URI"), h.Get("WARC-Identified-Content-Language")
			if want, ok := byURL[u]; !ok || l != want {
				t.Errorf("%s: WET language %q, index row's %q (row found: %v)", u, l, want, ok)
			}
			if l != "" {
				named++
			}
		})
	}
	t.Logf("%d of %d WET records name languages", named, texts)
	if named == 0 {
		t.Errorf("none of %d WET records names a language", texts)
	}
}

// findWarcio returns the warcio command, or "" after logging that what
// is not read with it; without it, PETREL_REQUIRE_BROWSER=1 fails the test.
func findWarcio(t *testing.T, what string) string {
	t.Helper()
	warcio := store.WarcioPath()
	if warcio == "" {
		if os.Getenv("PETREL_REQUIRE_BROWSER") == "1" {
			t.Fatal("warcio not found: set PETREL_WARCIO (npm install warcio@2.4.11)")
		}
		t.Logf("warcio not found, %s not read with it: npm install warcio@2.4.11 and set PETREL_WARCIO to node_modules/.bin/warcio", what)
	}
	return warcio
}

// checkWarcio reads WAT or WET files with warcio index: want records in
// all (-1: any number), a warcinfo record among them.
func checkWarcio(t *testing.T, files []string, want int) {
	t.Helper()
	warcio := findWarcio(t, "WAT and WET files")
	if warcio == "" {
		return
	}
	out, err := exec.Command(warcio, append([]string{"index"}, files...)...).Output()
	if err != nil {
		t.Fatalf("warcio index %s: %v", files, err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if want >= 0 && len(lines) != want {
		t.Errorf("warcio index: %d records, want %d", len(lines), want)
	}
	if !strings.Contains(string(out), `"warc-type":"warcinfo"`) {
		t.Errorf("warcio index %s: %.300s", files, out)
	}
}

// crawlLogCounts counts the captures the crawl log says were stored
// (a "warc:" annotation) by registered domain and by status.
func crawlLogCounts(t *testing.T, dir string) (domains, statuses map[string]int) {
	t.Helper()
	domains, statuses = map[string]int{}, map[string]int{}
	for _, l := range readLines(t, filepath.Join(dir, "logs", "crawl.log")) {
		f := strings.Fields(l)
		if len(f) < 12 || !strings.Contains(f[len(f)-1], "warc:") {
			continue
		}
		u, err := url.Parse(f[3])
		if err != nil {
			t.Fatal(err)
		}
		domains[urlx.RegisteredDomain(u.Hostname())]++
		statuses[f[1]]++
	}
	return domains, statuses
}

// checkDuckDB queries the index with DuckDB: the counts by domain and
// status are the crawl log's, and a page located by warc_filename,
// warc_record_offset and warc_record_length is that URL's record.
func checkDuckDB(t *testing.T, dir, index string, domains, statuses map[string]int) {
	t.Helper()
	modules := os.Getenv("PETREL_NODE_MODULES")
	if modules == "" {
		modules = "/opt/petrel-tools/node_modules"
	}
	node, err := exec.LookPath("node")
	if _, serr := os.Stat(filepath.Join(modules, "@duckdb", "node-api")); err != nil || serr != nil {
		if os.Getenv("PETREL_REQUIRE_BROWSER") == "1" {
			t.Fatal("node or @duckdb/node-api not found: npm install @duckdb/node-api in /opt/petrel-tools (or set PETREL_NODE_MODULES)")
		}
		t.Skip("node or @duckdb/node-api not found, index not queried: npm install @duckdb/node-api in /opt/petrel-tools or set PETREL_NODE_MODULES")
	}
	script := filepath.Join(t.TempDir(), "query.js")
	if err := os.WriteFile(script, []byte(duckdbScript), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, script, index)
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("duckdb: %v\n%s", err, stderr.String())
	}
	var res struct {
		Domains, Statuses, Types []struct {
			K string
			N any
		}
		Page struct {
			URL    string `json:"url"`
			File   string `json:"warc_filename"`
			Offset any    `json:"warc_record_offset"`
			Len    any    `json:"warc_record_length"`
		}
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("duckdb output %s: %v", out, err)
	}
	got := func(kv []struct {
		K string
		N any
	}) map[string]int {
		m := map[string]int{}
		for _, e := range kv {
			n, _ := strconv.Atoi(fmt.Sprint(e.N))
			m[e.K] = n
		}
		return m
	}
	if g := got(res.Domains); fmt.Sprint(g) != fmt.Sprint(domains) {
		t.Errorf("DuckDB by registered domain %v, crawl log %v", g, domains)
	}
	if g := got(res.Statuses); fmt.Sprint(g) != fmt.Sprint(statuses) {
		t.Errorf("DuckDB by status %v, crawl log %v", g, statuses)
	}
	types := map[string]string{}
	for _, e := range res.Types {
		types[e.K] = fmt.Sprint(e.N)
	}
	for col, want := range map[string]string{"url_surtkey": "VARCHAR", "fetch_time": "TIMESTAMP", "fetch_status": "SMALLINT",
		"warc_record_offset": "INTEGER", "warc_record_length": "INTEGER", "content_simhash": "BIGINT", "url_port": "INTEGER",
		"content_languages": "VARCHAR"} {
		if !strings.HasPrefix(types[col], want) {
			t.Errorf("column %s: %s, want %s", col, types[col], want)
		}
	}
	p := res.Page
	off, _ := strconv.ParseInt(fmt.Sprint(p.Offset), 10, 64)
	n, _ := strconv.ParseInt(fmt.Sprint(p.Len), 10, 64)
	f, err := os.Open(filepath.Join(dir, filepath.FromSlash(p.File)))
	if err != nil {
		t.Fatalf("row %+v: %v", p, err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(io.NewSectionReader(f, off, n))
	if err != nil {
		t.Fatalf("row %+v: %v", p, err)
	}
	zr.Multistream(false)
	rec, err := io.ReadAll(zr)
	if err != nil || !bytes.Contains(rec, []byte("WARC-Type: response\r\n")) || !bytes.Contains(rec, []byte("WARC-Target-URI: "+p.URL+"\r\n")) {
		t.Errorf("record at %s %d+%d is not %s's response (%v): %.300q", p.File, off, n, p.URL, err, rec)
	}
}
