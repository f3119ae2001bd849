package wacz

import (
	"archive/zip"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/petrel-crawler/petrel/internal/store"
)

// Version is the WACZ version written.
const Version = "1.1.1"

// DefaultCompressIndexAbove is the merged index size above which the index
// is written as index.cdx.gz and index.idx rather than index.cdxj.
const DefaultCompressIndexAbove = 50_000

// IndexBlockLines is the number of index lines in one gzip member of
// index.cdx.gz (one index.idx line each).
const IndexBlockLines = 3000

// Options configure Write. The zero value of every field selects its
// default.
type Options struct {
	// Title of the package (default: the first crawl directory's name).
	Title string
	// Software names the packager, e.g. "Petrel/0.1.0".
	Software string
	// Created is the package's creation time (default now).
	Created time.Time
	// CompressIndexAbove: a merged index larger than this many bytes is
	// written as index.cdx.gz with index.idx (default
	// DefaultCompressIndexAbove; negative: always).
	CompressIndexAbove int64
}

// Result tells what Write packaged.
type Result struct {
	WARCFiles       int
	WARCBytes       int64
	IndexLines      int64
	CompressedIndex bool // index.cdx.gz and index.idx rather than index.cdxj
	Pages           int  // seed pages (pages.jsonl)
	ExtraPages      int  // other pages (extraPages.jsonl)
	Bytes           int64
}

// resource is one entry of datapackage.json's resources.
type resource struct {
	Name  string `json:"name"`
	Path  string `json:"path"`
	Hash  string `json:"hash"`
	Bytes int64  `json:"bytes"`
}

// packer writes one WACZ file.
type packer struct {
	zw        *zip.Writer
	created   time.Time
	resources []resource
}

// Write packages the crawl directories dirs (each with warc/, and logs/
// pages.jsonl if it crawled pages) into a WACZ file at out, written
// through a temporary file renamed at the end. The crawls' merged indexes
// are brought up to date first (store.IndexCrawl).
func Write(out string, dirs []string, opts Options) (Result, error) {
	var res Result
	if len(dirs) == 0 {
		return res, errors.New("wacz: no crawl directory")
	}
	if opts.Created.IsZero() {
		opts.Created = time.Now()
	}
	if opts.Title == "" {
		abs, _ := filepath.Abs(dirs[0])
		opts.Title = filepath.Base(abs)
	}
	if opts.CompressIndexAbove == 0 {
		opts.CompressIndexAbove = DefaultCompressIndexAbove
	}
	var warcs []string
	seen := map[string]string{}
	for _, d := range dirs {
		rep, err := store.IndexCrawl(d, store.IndexOptions{})
		if err != nil {
			return res, fmt.Errorf("wacz: %s: %w", d, err)
		}
		if len(rep.Skipped) > 0 {
			return res, fmt.Errorf("wacz: %s: %w (petrel warc check tells more; move the file out of warc/ to package the rest)", d, rep.Skipped[0])
		}
		files, err := store.WARCFiles([]string{filepath.Join(d, "warc")})
		if err != nil {
			return res, fmt.Errorf("wacz: %w", err)
		}
		for _, f := range files {
			base := filepath.Base(f)
			if other, ok := seen[base]; ok {
				return res, fmt.Errorf("wacz: two WARC files named %s (%s and %s)", base, other, f)
			}
			seen[base] = f
			warcs = append(warcs, f)
		}
	}
	tmp := out + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return res, fmt.Errorf("wacz: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			f.Close()
			os.Remove(tmp)
		}
	}()
	bw := bufio.NewWriterSize(f, 1<<20)
	p := &packer{zw: zip.NewWriter(bw), created: opts.Created.UTC()}
	for _, w := range warcs {
		n, err := p.copyFile("archive/"+filepath.Base(w), w)
		if err != nil {
			return res, err
		}
		res.WARCFiles++
		res.WARCBytes += n
	}
	if res.IndexLines, res.CompressedIndex, err = p.writeIndex(dirs, filepath.Dir(out), opts.CompressIndexAbove); err != nil {
		return res, err
	}
	main, err := p.writePages(dirs, &res)
	if err != nil {
		return res, err
	}
	if err := p.writeDataPackage(opts, main); err != nil {
		return res, err
	}
	if err := p.zw.Close(); err != nil {
		return res, fmt.Errorf("wacz: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return res, fmt.Errorf("wacz: %w", err)
	}
	if err := f.Sync(); err != nil {
		return res, fmt.Errorf("wacz: %w", err)
	}
	if fi, err := f.Stat(); err == nil {
		res.Bytes = fi.Size()
	}
	if err := f.Close(); err != nil {
		return res, fmt.Errorf("wacz: %w", err)
	}
	if err := os.Rename(tmp, out); err != nil {
		return res, fmt.Errorf("wacz: %w", err)
	}
	ok = true
	return res, nil
}

// entry starts a ZIP entry; stored entries are not compressed, as WACZ
// requires for archive/ and indexes/ (readers fetch ranges of them).
func (p *packer) entry(name string, stored bool) (io.Writer, error) {
	h := &zip.FileHeader{Name: name, Method: zip.Deflate, Modified: p.created}
	if stored {
		h.Method = zip.Store
	}
	w, err := p.zw.CreateHeader(h)
	if err != nil {
		return nil, fmt.Errorf("wacz: %s: %w", name, err)
	}
	return w, nil
}

// hashed counts and hashes what goes through it into the current entry,
// and lists the entry as a resource when done.
type hashed struct {
	w    io.Writer
	h    hash.Hash
	n    int64
	name string
}

func (p *packer) hashedEntry(name string, stored bool) (*hashed, error) {
	w, err := p.entry(name, stored)
	if err != nil {
		return nil, err
	}
	return &hashed{w: w, h: sha256.New(), name: name}, nil
}

func (h *hashed) Write(b []byte) (int, error) {
	n, err := h.w.Write(b)
	h.h.Write(b[:n])
	h.n += int64(n)
	return n, err
}

func (p *packer) done(h *hashed) {
	p.resources = append(p.resources, resource{Name: filepath.Base(h.name), Path: h.name,
		Hash: "sha256:" + hex.EncodeToString(h.h.Sum(nil)), Bytes: h.n})
}

// copyFile streams the file at src into a stored entry.
func (p *packer) copyFile(name, src string) (int64, error) {
	in, err := os.Open(src)
	if err != nil {
		return 0, fmt.Errorf("wacz: %w", err)
	}
	defer in.Close()
	h, err := p.hashedEntry(name, true)
	if err != nil {
		return 0, err
	}
	if _, err := io.Copy(h, in); err != nil {
		return 0, fmt.Errorf("wacz: %s: %w", name, err)
	}
	p.done(h)
	return h.n, nil
}

// writeIndex writes the merged index of the crawls, as index.cdxj or, above
// limit bytes, as index.cdx.gz and index.idx. Several crawls' indexes are
// merged into a temporary file in tmpDir first.
func (p *packer) writeIndex(dirs []string, tmpDir string, limit int64) (int64, bool, error) {
	path := store.MergedIndex(dirs[0])
	if len(dirs) > 1 {
		merged, err := os.CreateTemp(tmpDir, ".wacz-index-*")
		if err != nil {
			return 0, false, fmt.Errorf("wacz: %w", err)
		}
		defer os.Remove(merged.Name())
		defer merged.Close()
		var inputs []io.Reader
		for _, d := range dirs {
			f, err := os.Open(store.MergedIndex(d))
			if err != nil {
				return 0, false, fmt.Errorf("wacz: %w", err)
			}
			defer f.Close()
			inputs = append(inputs, f)
		}
		if _, err := store.MergeSorted(inputs, merged); err != nil {
			return 0, false, fmt.Errorf("wacz: merge indexes: %w", err)
		}
		path = merged.Name()
	}
	fi, err := os.Stat(path)
	if err != nil {
		return 0, false, fmt.Errorf("wacz: %w", err)
	}
	if limit >= 0 && fi.Size() <= limit {
		if _, err := p.copyFile("indexes/index.cdxj", path); err != nil {
			return 0, false, err
		}
		lines, err := countLines(path)
		return lines, false, err
	}
	n, err := p.writeZipNum(path)
	return n, true, err
}

func countLines(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("wacz: %w", err)
	}
	defer f.Close()
	var n int64
	buf := make([]byte, 256<<10)
	for {
		k, err := f.Read(buf)
		n += int64(bytes.Count(buf[:k], []byte{'\n'}))
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, fmt.Errorf("wacz: %w", err)
		}
	}
}

// writeZipNum writes the index at path as indexes/index.cdx.gz, gzip
// members of IndexBlockLines lines each, and indexes/index.idx, one line per
// member.
func (p *packer) writeZipNum(path string) (int64, error) {
	in, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("wacz: %w", err)
	}
	defer in.Close()
	h, err := p.hashedEntry("indexes/index.cdx.gz", true)
	if err != nil {
		return 0, err
	}
	var idx bytes.Buffer
	idx.WriteString(`!meta 0 {"format":"cdxj-gzip-1.0","filename":"index.cdx.gz"}` + "\n")
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var block, member bytes.Buffer
	var first []byte
	var lines, inBlock int64
	gz := gzip.NewWriter(&member)
	flush := func() error {
		if inBlock == 0 {
			return nil
		}
		member.Reset()
		gz.Reset(&member)
		gz.Write(block.Bytes())
		if err := gz.Close(); err != nil {
			return err
		}
		off := h.n
		if _, err := h.Write(member.Bytes()); err != nil {
			return fmt.Errorf("wacz: index.cdx.gz: %w", err)
		}
		sum := sha256.Sum256(member.Bytes())
		key := first
		if i := bytes.Index(first, []byte(" {")); i >= 0 {
			key = first[:i]
		}
		fmt.Fprintf(&idx, `%s {"offset":%d,"length":%d,"digest":"sha256:%x","filename":"index.cdx.gz"}`+"\n",
			key, off, member.Len(), sum)
		block.Reset()
		inBlock = 0
		return nil
	}
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 {
			continue
		}
		if inBlock == 0 {
			first = append(first[:0], line...)
		}
		block.Write(line)
		block.WriteByte('\n')
		inBlock++
		lines++
		if inBlock == IndexBlockLines {
			if err := flush(); err != nil {
				return 0, err
			}
		}
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("wacz: %s: %w", path, err)
	}
	if err := flush(); err != nil {
		return 0, err
	}
	p.done(h)
	ih, err := p.hashedEntry("indexes/index.idx", true)
	if err != nil {
		return 0, err
	}
	if _, err := ih.Write(idx.Bytes()); err != nil {
		return 0, fmt.Errorf("wacz: index.idx: %w", err)
	}
	p.done(ih)
	return lines, nil
}

// pageLine is a line of a crawl's logs/pages.jsonl (see internal/agent).
type pageLine struct {
	URL    string `json:"url"`
	TS     string `json:"ts"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Mime   string `json:"mime"`
	Seed   bool   `json:"seed"`
}

// waczPage is a line of pages.jsonl and extraPages.jsonl.
type waczPage struct {
	ID     string `json:"id"`
	URL    string `json:"url"`
	TS     string `json:"ts"`
	Title  string `json:"title,omitempty"`
	Status int    `json:"status,omitempty"`
	Mime   string `json:"mime,omitempty"`
}

// writePages writes pages/pages.jsonl (seeds) and pages/extraPages.jsonl
// (every other page) from the crawls' page logs and returns the first seed
// page (for mainPageUrl).
func (p *packer) writePages(dirs []string, res *Result) (*waczPage, error) {
	var main *waczPage
	for _, seeds := range []bool{true, false} {
		name, header := "pages/pages.jsonl", `{"format":"json-pages-1.0","id":"pages","title":"Seed Pages"}`
		if !seeds {
			name, header = "pages/extraPages.jsonl", `{"format":"json-pages-1.0","id":"extra-pages","title":"Extra Pages"}`
		}
		h, err := p.hashedEntry(name, false)
		if err != nil {
			return nil, err
		}
		bw := bufio.NewWriter(h)
		bw.WriteString(header + "\n")
		enc := json.NewEncoder(bw)
		enc.SetEscapeHTML(false)
		for _, d := range dirs {
			err := eachPage(filepath.Join(d, "logs", "pages.jsonl"), func(l pageLine) error {
				if l.Seed != seeds {
					return nil
				}
				id := sha1.Sum([]byte(l.URL + " " + l.TS))
				pg := waczPage{ID: hex.EncodeToString(id[:16]), URL: l.URL, TS: l.TS, Title: l.Title, Status: l.Status, Mime: l.Mime}
				if seeds && main == nil {
					main = &pg
				}
				if seeds {
					res.Pages++
				} else {
					res.ExtraPages++
				}
				return enc.Encode(pg)
			})
			if err != nil {
				return nil, err
			}
		}
		if err := bw.Flush(); err != nil {
			return nil, fmt.Errorf("wacz: %s: %w", name, err)
		}
		p.done(h)
	}
	return main, nil
}

// eachPage calls fn with each line of a page log; a missing log is empty,
// a malformed line is skipped.
func eachPage(path string, fn func(pageLine) error) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("wacz: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var l pageLine
		if json.Unmarshal(sc.Bytes(), &l) != nil || l.URL == "" {
			continue
		}
		if err := fn(l); err != nil {
			return fmt.Errorf("wacz: pages: %w", err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("wacz: %s: %w", path, err)
	}
	return nil
}

// dataPackage is datapackage.json.
type dataPackage struct {
	Profile      string     `json:"profile"`
	WACZVersion  string     `json:"wacz_version"`
	Title        string     `json:"title"`
	Created      string     `json:"created"`
	Software     string     `json:"software,omitempty"`
	MainPageURL  string     `json:"mainPageUrl,omitempty"`
	MainPageDate string     `json:"mainPageDate,omitempty"`
	Resources    []resource `json:"resources"`
}

// digestFile is datapackage-digest.json.
type digestFile struct {
	Path string `json:"path"`
	Hash string `json:"hash"`
}

func (p *packer) writeDataPackage(opts Options, main *waczPage) error {
	dp := dataPackage{
		Profile:     "data-package",
		WACZVersion: Version,
		Title:       opts.Title,
		Created:     p.created.Format(time.RFC3339),
		Software:    opts.Software,
		Resources:   p.resources,
	}
	if main != nil {
		dp.MainPageURL, dp.MainPageDate = main.URL, main.TS
	}
	b, err := json.MarshalIndent(dp, "", "  ")
	if err != nil {
		return fmt.Errorf("wacz: %w", err)
	}
	w, err := p.entry("datapackage.json", false)
	if err != nil {
		return err
	}
	if _, err := w.Write(b); err != nil {
		return fmt.Errorf("wacz: datapackage.json: %w", err)
	}
	sum := sha256.Sum256(b)
	d, _ := json.MarshalIndent(digestFile{Path: "datapackage.json", Hash: "sha256:" + hex.EncodeToString(sum[:])}, "", "  ")
	w, err = p.entry("datapackage-digest.json", false)
	if err != nil {
		return err
	}
	if _, err := w.Write(d); err != nil {
		return fmt.Errorf("wacz: datapackage-digest.json: %w", err)
	}
	return nil
}
