package wacz

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/petrel-crawler/petrel/internal/store"
)

// makeCrawl writes a crawl directory as the crawler leaves it: WARC files
// (prefix names them) with their indexes, indexes/index.cdxj and
// logs/pages.jsonl. Page 0 is the seed.
func makeCrawl(t *testing.T, prefix string, pages int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), prefix)
	w, err := store.Open(store.Options{Dir: filepath.Join(dir, "warc"), Prefix: prefix, Index: true,
		MaxFileBytes: 8 << 10, DigestsExpected: 1000, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(dir, "logs"), 0o755)
	var log bytes.Buffer
	d := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	for i := range pages {
		u := fmt.Sprintf("http://%s.example.test/p%d.html", prefix, i)
		body := fmt.Sprintf("<html><title>%s page %d</title>%s</html>", prefix, i, strings.Repeat("w", 300+i))
		date := d.Add(time.Duration(i) * time.Second)
		_, err := w.Write(&store.Exchange{TargetURI: u, Date: date,
			Request:  []byte("GET /p HTTP/1.1\r\nHost: x\r\n\r\n"),
			Response: []byte("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n" + body)})
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&log, `{"url":%q,"ts":%q,"title":"%s page %d","status":200,"mime":"text/html","seed":%v}`+"\n",
			u, date.Format("2006-01-02T15:04:05.000000Z"), prefix, i, i == 0)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "logs", "pages.jsonl"), log.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func readZip(t *testing.T, path string) map[string][]byte {
	t.Helper()
	zr, err := zip.OpenReader(path)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	out := map[string][]byte{}
	for _, f := range zr.File {
		rc, _ := f.Open()
		out[f.Name], _ = io.ReadAll(rc)
		rc.Close()
		if (strings.HasPrefix(f.Name, "archive/") || strings.HasPrefix(f.Name, "indexes/")) && f.Method != zip.Store {
			t.Errorf("%s is compressed", f.Name)
		}
	}
	return out
}

func TestWriteAndCheck(t *testing.T) {
	a, b := makeCrawl(t, "agenta", 30), makeCrawl(t, "agentb", 20)
	for _, compress := range []int64{0, -1} {
		out := filepath.Join(t.TempDir(), "crawl.wacz")
		res, err := Write(out, []string{a, b}, Options{Title: "two agents", Software: "Petrel/test", CompressIndexAbove: compress})
		if err != nil {
			t.Fatal(err)
		}
		if res.IndexLines != 50 || res.Pages != 2 || res.ExtraPages != 48 || res.CompressedIndex != (compress < 0) {
			t.Errorf("compress %d: result %+v", compress, res)
		}
		cr, err := Check(out)
		if err != nil {
			t.Fatalf("compress %d: Check: %v", compress, err)
		}
		if cr.IndexLines != 50 {
			t.Errorf("Check verified %d index lines; want 50", cr.IndexLines)
		}
		files := readZip(t, out)
		var dp dataPackage
		if err := json.Unmarshal(files["datapackage.json"], &dp); err != nil {
			t.Fatal(err)
		}
		if dp.WACZVersion != "1.1.1" || dp.Title != "two agents" || dp.MainPageURL != "http://agenta.example.test/p0.html" ||
			dp.MainPageDate != "2024-01-02T03:04:05.000000Z" || dp.Software != "Petrel/test" || len(dp.Resources) != len(files)-2 {
			t.Errorf("datapackage.json: %+v", dp)
		}
		pages := strings.Split(strings.TrimSpace(string(files["pages/pages.jsonl"])), "\n")
		if pages[0] != `{"format":"json-pages-1.0","id":"pages","title":"Seed Pages"}` || len(pages) != 3 ||
			!strings.Contains(pages[1], `"title":"agenta page 0","status":200,"mime":"text/html"`) {
			t.Errorf("pages.jsonl:\n%s", files["pages/pages.jsonl"])
		}
		if extra := strings.Split(strings.TrimSpace(string(files["pages/extraPages.jsonl"])), "\n"); len(extra) != 49 ||
			!strings.HasPrefix(extra[0], `{"format":"json-pages-1.0","id":"extra-pages"`) {
			t.Errorf("extraPages.jsonl: %d lines", len(extra))
		}
		if compress < 0 {
			idx := string(files["indexes/index.idx"])
			if !strings.HasPrefix(idx, `!meta 0 {"format":"cdxj-gzip-1.0","filename":"index.cdx.gz"}`) || files["indexes/index.cdxj"] != nil {
				t.Errorf("index.idx:\n%s", idx)
			}
		} else if lines := strings.Count(string(files["indexes/index.cdxj"]), "\n"); lines != 50 {
			t.Errorf("index.cdxj: %d lines", lines)
		}
	}
}

// TestCheckFindsDamage: a changed byte in a WARC file, a wrong digest file,
// an index line pointing elsewhere and a compressed WARC entry are each
// found.
func TestCheckFindsDamage(t *testing.T) {
	crawl := makeCrawl(t, "c", 12)
	good := filepath.Join(t.TempDir(), "good.wacz")
	if _, err := Write(good, []string{crawl}, Options{}); err != nil {
		t.Fatal(err)
	}
	files := readZip(t, good)
	rebuild := func(change func(name string, data []byte) ([]byte, uint16)) string {
		zr, err := zip.OpenReader(good)
		if err != nil {
			t.Fatal(err)
		}
		defer zr.Close()
		out := filepath.Join(t.TempDir(), "bad.wacz")
		f, _ := os.Create(out)
		zw := zip.NewWriter(f)
		for _, zf := range zr.File {
			data, method := change(zf.Name, bytes.Clone(files[zf.Name]))
			w, _ := zw.CreateHeader(&zip.FileHeader{Name: zf.Name, Method: method})
			w.Write(data)
		}
		zw.Close()
		f.Close()
		return out
	}
	methodOf := func(name string) uint16 {
		if strings.HasPrefix(name, "archive/") || strings.HasPrefix(name, "indexes/") {
			return zip.Store
		}
		return zip.Deflate
	}
	if _, err := Check(rebuild(func(n string, d []byte) ([]byte, uint16) { return d, methodOf(n) })); err != nil {
		t.Fatalf("Check of a faithful copy: %v", err)
	}
	cases := map[string]func(n string, d []byte) ([]byte, uint16){
		"sha256:": func(n string, d []byte) ([]byte, uint16) {
			if strings.HasPrefix(n, "archive/") {
				d[len(d)/2] ^= 1
			}
			return d, methodOf(n)
		},
		"datapackage-digest.json": func(n string, d []byte) ([]byte, uint16) {
			if n == "datapackage-digest.json" {
				d = bytes.Replace(d, []byte("sha256:"), []byte("sha256:0"), 1)
			}
			return d, methodOf(n)
		},
		"must be stored": func(n string, d []byte) ([]byte, uint16) {
			if strings.HasPrefix(n, "archive/") {
				return d, zip.Deflate
			}
			return d, methodOf(n)
		},
	}
	for want, change := range cases {
		if _, err := Check(rebuild(change)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("damage %q: Check = %v", want, err)
		}
	}
	// An index line pointing at the wrong offset, with datapackage.json
	// kept consistent, is found by reading the record.
	idx := string(files["indexes/index.cdxj"])
	first := strings.SplitN(idx, "\n", 2)[0]
	moved := strings.Replace(first, `"offset":"`, `"offset":"1`, 1)
	badIdx := strings.Replace(idx, first, moved, 1)
	if _, err := Check(rebuildConsistent(t, good, "indexes/index.cdxj", []byte(badIdx))); err == nil {
		t.Error("Check accepted an index line with a wrong offset")
	}
	if _, err := Write(filepath.Join(t.TempDir(), "x.wacz"), []string{crawl, crawl}, Options{}); err == nil || !strings.Contains(err.Error(), "two WARC files named") {
		t.Errorf("packaging a directory twice: %v", err)
	}
}

// rebuildConsistent copies the WACZ at path with one entry replaced and
// datapackage.json and its digest updated to match.
func rebuildConsistent(t *testing.T, path, name string, data []byte) string {
	t.Helper()
	files := readZip(t, path)
	files[name] = data
	var dp dataPackage
	json.Unmarshal(files["datapackage.json"], &dp)
	out := filepath.Join(t.TempDir(), "consistent.wacz")
	f, _ := os.Create(out)
	p := &packer{zw: zip.NewWriter(f), created: time.Now()}
	for _, r := range dp.Resources {
		h, _ := p.hashedEntry(r.Path, true)
		h.Write(files[r.Path])
		p.done(h)
	}
	if err := p.writeDataPackage(Options{Title: dp.Title}, nil); err != nil {
		t.Fatal(err)
	}
	p.zw.Close()
	f.Close()
	return out
}

// BenchmarkWrite packages a crawl directory of PETREL_WACZ_BENCH_MB MiB of
// WARC files (default 32; BENCHMARKS.md reports 1024) and reports MB/s of
// package written. The crawl is generated once, outside the timing.
func BenchmarkWrite(b *testing.B) {
	mb := 32
	if v := os.Getenv("PETREL_WACZ_BENCH_MB"); v != "" {
		fmt.Sscan(v, &mb)
	}
	dir := filepath.Join(b.TempDir(), "crawl")
	w, err := store.Open(store.Options{Dir: filepath.Join(dir, "warc"), Index: true, GzipLevel: 1,
		DigestsExpected: 1 << 16, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	os.MkdirAll(filepath.Join(dir, "logs"), 0o755)
	pages, _ := os.Create(filepath.Join(dir, "logs", "pages.jsonl"))
	page := make([]byte, 20<<10)
	seed := uint64(1)
	d := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	for i := 0; w.Stats().CompressedBytes < int64(mb)<<20; i++ {
		for j := range page { // incompressible enough: pseudo-random letters
			seed = seed*6364136223846793005 + 1442695040888963407
			page[j] = 'a' + byte(seed>>59)
		}
		u := fmt.Sprintf("http://h%d.example.test/p%d.html", i%100, i)
		if _, err := w.Write(&store.Exchange{TargetURI: u, Date: d,
			Request:  []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"),
			Response: append([]byte("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n"), page...)}); err != nil {
			b.Fatal(err)
		}
		fmt.Fprintf(pages, `{"url":%q,"ts":"2024-01-02T03:04:05.000000Z","title":"page %d","status":200,"mime":"text/html","seed":%v}`+"\n", u, i, i < 100)
	}
	pages.Close()
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	if _, err := store.IndexCrawl(dir, store.IndexOptions{}); err != nil {
		b.Fatal(err)
	}
	out := filepath.Join(b.TempDir(), "crawl.wacz")
	b.ResetTimer()
	var size int64
	cpu0 := cpuSeconds()
	for b.Loop() {
		res, err := Write(out, []string{dir}, Options{})
		if err != nil {
			b.Fatal(err)
		}
		size = res.Bytes
	}
	b.SetBytes(size)
	b.ReportMetric((cpuSeconds()-cpu0)/float64(b.N), "cpu-s/op")
}

// cpuSeconds is the process's user and system CPU time.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
}
