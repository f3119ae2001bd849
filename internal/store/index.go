package store

import (
	"bufio"
	"bytes"
	"container/heap"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/petrel-crawler/petrel/internal/atomicfile"
)

// A CDXJ index line is
//
//	SURT-KEY 14-DIGIT-TIMESTAMP {"url":…,"mime":…,"status":…,"digest":…,"length":…,"offset":…,"filename":…,"languages":…}
//
// with the fields in that order, "mime", "status" and "digest" omitted when
// unknown, "languages" (the page's languages as Common Crawl's cc-index
// writes them: ISO 639-3 codes, largest share first, comma-separated, as
// "eng,fra") only in a line the writer wrote for an exchange whose
// Languages it was given or, in an index made again from the WARC file,
// when IndexOptions.Languages found them, and the JSON written as JavaScript's JSON.stringify writes it
// (no HTML escaping), so that an index equals warcio's cdx-index byte for
// byte, but for the status of a server-not-modified revisit record
// (notModifiedIndexStatus; warcio writes its header's 304). An index is sorted by the bytes of its lines (LC_ALL=C sort order),
// which is also the order of key, then timestamp, since a space sorts
// before every character of a key.

// notModifiedIndexStatus is the status an index line gives a
// server-not-modified revisit record: that of the capture the 304
// confirms (a 200: conditional requests are sent only for 200s), not the
// 304 its HTTP header holds. Replay tools take a revisit record of a 3xx
// status for a redirect's and serve its empty body (ReplayWeb.page does);
// of a 200, they serve the capture it refers to.
const notModifiedIndexStatus = 200

// indexEntry is what a CDXJ line says about one response or revisit
// record.
type indexEntry struct {
	uri      string
	date     time.Time
	mime     string // "" when unknown; "warc/revisit" for revisits
	status   int    // 0 when unknown; notModifiedIndexStatus for a server-not-modified revisit
	digest   string // payload digest without "sha1:", or ""
	length   int64  // of the record as stored (its gzip member)
	offset   int64
	filename string // base name of the WARC file
	langs    string // the languages field, or "" to leave it out
}

// cdxjPrefix returns the part of e's line before its length, offset and
// filename, which only the appender knows.
func (e *indexEntry) cdxjPrefix(b []byte) []byte {
	b = append(b, SURT(e.uri)...)
	b = append(b, ' ')
	b = e.date.UTC().AppendFormat(b, "20060102150405")
	b = append(b, ` {"url":`...)
	b = appendJSString(b, e.uri)
	if e.mime != "" {
		b = append(b, `,"mime":`...)
		b = appendJSString(b, e.mime)
	}
	if e.status > 0 {
		b = append(b, `,"status":"`...)
		b = strconv.AppendInt(b, int64(e.status), 10)
		b = append(b, '"')
	}
	if e.digest != "" {
		b = append(b, `,"digest":`...)
		b = appendJSString(b, e.digest)
	}
	return b
}

// cdxjSuffix completes a line begun by cdxjPrefix; langs "" leaves the
// languages field out.
func cdxjSuffix(b []byte, length, offset int64, filename, langs string) []byte {
	b = append(b, `,"length":"`...)
	b = strconv.AppendInt(b, length, 10)
	b = append(b, `","offset":"`...)
	b = strconv.AppendInt(b, offset, 10)
	b = append(b, `","filename":`...)
	b = appendJSString(b, filename)
	if langs != "" {
		b = append(b, `,"languages":`...)
		b = appendJSString(b, langs)
	}
	return append(b, '}')
}

// line returns e's whole CDXJ line, without a line break.
func (e *indexEntry) line() []byte {
	return cdxjSuffix(e.cdxjPrefix(make([]byte, 0, 256)), e.length, e.offset, e.filename, e.langs)
}

// appendJSString appends s as JSON.stringify quotes a string: '"' and '\'
// escaped, control characters as \b \t \n \f \r or \u00xx, everything else
// (HTML characters, U+2028, U+2029) as is. Invalid UTF-8 becomes U+FFFD,
// as a JavaScript reader decoding the file would make it.
func appendJSString(b []byte, s string) []byte {
	b = append(b, '"')
	kept := 0 // s[kept:i] goes into b as it is
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c >= 0x20 && c < utf8.RuneSelf && c != '"' && c != '\\':
			i++
			continue
		case c >= utf8.RuneSelf:
			if r, size := utf8.DecodeRuneInString(s[i:]); r != utf8.RuneError || size != 1 {
				i += size
				continue
			}
			b = append(b, s[kept:i]...)
			b = utf8.AppendRune(b, utf8.RuneError)
		default:
			b = append(b, s[kept:i]...)
			b = appendJSEscape(b, c)
		}
		i++
		kept = i
	}
	b = append(b, s[kept:]...)
	return append(b, '"')
}

// appendJSEscape appends the escape of the ASCII byte c, a control
// character, '"' or '\\', as appendJSString writes it.
func appendJSEscape(b []byte, c byte) []byte {
	const hex = "0123456789abcdef"
	switch c {
	case '"', '\\':
		return append(b, '\\', c)
	case '\b':
		return append(b, `\b`...)
	case '\t':
		return append(b, `\t`...)
	case '\n':
		return append(b, `\n`...)
	case '\f':
		return append(b, `\f`...)
	case '\r':
		return append(b, `\r`...)
	}
	return append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
}

// lineSorter sorts CDXJ lines by their bytes within a memory budget: lines
// are held in memory up to budget bytes, then written as a sorted run to a
// temporary file in dir; WriteTo merges the runs. The zero value is not
// usable; see newLineSorter.
type lineSorter struct {
	dir    string
	budget int
	lines  [][]byte
	held   int
	runs   []*os.File
}

// defaultSortBudget is the memory a lineSorter holds lines in before it
// spills a run to disk.
const defaultSortBudget = 16 << 20

func newLineSorter(dir string, budget int) *lineSorter {
	if budget <= 0 {
		budget = defaultSortBudget
	}
	return &lineSorter{dir: dir, budget: budget}
}

// add takes line (without a line break); the sorter keeps it.
func (s *lineSorter) add(line []byte) error {
	s.lines = append(s.lines, line)
	s.held += len(line) + 24
	if s.held >= s.budget {
		return s.spill()
	}
	return nil
}

func (s *lineSorter) sortHeld() {
	slices.SortStableFunc(s.lines, bytes.Compare)
}

// spill writes the held lines as a sorted run.
func (s *lineSorter) spill() error {
	if len(s.lines) == 0 {
		return nil
	}
	f, err := os.CreateTemp(s.dir, ".cdxj-run-*")
	if err != nil {
		return fmt.Errorf("store: index: %w", err)
	}
	os.Remove(f.Name()) // the open descriptor keeps it until closed
	s.runs = append(s.runs, f)
	s.sortHeld()
	bw := bufio.NewWriterSize(f, 256<<10)
	for _, l := range s.lines {
		bw.Write(l)
		bw.WriteByte('\n')
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("store: index: %w", err)
	}
	clear(s.lines)
	s.lines, s.held = s.lines[:0], 0
	return nil
}

// writeTo writes every line added, sorted, one per line, and releases the
// sorter's memory and files.
func (s *lineSorter) writeTo(w io.Writer) (n int64, err error) {
	defer s.close()
	if len(s.runs) == 0 {
		s.sortHeld()
		bw := bufio.NewWriterSize(w, 256<<10)
		for _, l := range s.lines {
			bw.Write(l)
			bw.WriteByte('\n')
			n++
		}
		return n, bw.Flush()
	}
	if err := s.spill(); err != nil {
		return 0, err
	}
	readers := make([]io.Reader, len(s.runs))
	for i, f := range s.runs {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return 0, fmt.Errorf("store: index: %w", err)
		}
		readers[i] = f
	}
	return MergeSorted(readers, w)
}

// close releases the sorter's runs.
func (s *lineSorter) close() {
	for _, f := range s.runs {
		f.Close()
	}
	s.runs, s.lines, s.held = nil, nil, 0
}

// MergeSorted merges inputs, each sorted by the bytes of its lines, into w
// (a k-way merge holding one line per input). Blank lines are dropped. It
// returns the number of lines written.
func MergeSorted(inputs []io.Reader, w io.Writer) (int64, error) {
	h := make(mergeHeap, 0, len(inputs))
	for _, in := range inputs {
		c := &mergeCursor{r: bufio.NewReaderSize(in, 64<<10)}
		if ok, err := c.next(); err != nil {
			return 0, err
		} else if ok {
			h = append(h, c)
		}
	}
	heap.Init(&h)
	bw := bufio.NewWriterSize(w, 256<<10)
	var n int64
	for len(h) > 0 {
		c := h[0]
		bw.Write(c.line)
		bw.WriteByte('\n')
		n++
		ok, err := c.next()
		if err != nil {
			return n, err
		}
		if ok {
			heap.Fix(&h, 0)
		} else {
			heap.Pop(&h)
		}
	}
	return n, bw.Flush()
}

type mergeCursor struct {
	r    *bufio.Reader
	line []byte
}

// next reads the cursor's next non-blank line.
func (c *mergeCursor) next() (bool, error) {
	for {
		l, err := c.r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long := append([]byte(nil), l...)
			for errors.Is(err, bufio.ErrBufferFull) {
				l, err = c.r.ReadSlice('\n')
				long = append(long, l...)
			}
			l = long
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return false, fmt.Errorf("store: index: %w", err)
		}
		line := bytes.TrimRight(l, "\r\n")
		if len(line) > 0 {
			c.line = append(c.line[:0], line...)
			return true, nil
		}
		if err != nil {
			return false, nil
		}
	}
}

type mergeHeap []*mergeCursor

func (h mergeHeap) Len() int           { return len(h) }
func (h mergeHeap) Less(i, j int) bool { return bytes.Compare(h[i].line, h[j].line) < 0 }
func (h mergeHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *mergeHeap) Push(x any)        { *h = append(*h, x.(*mergeCursor)) }
func (h *mergeHeap) Pop() any {
	old := *h
	c := old[len(old)-1]
	*h = old[:len(old)-1]
	return c
}

// WARCFiles expands paths into WARC files: a directory stands for the
// *.warc.gz and *.warc files directly inside it (files still being
// written, *.open, are left out: OpenWARCFiles lists them), sorted by name,
// and a crawl directory (one with a warc/ subdirectory) for those of its
// warc/; a file stands for itself. A path that does not exist is an error.
func WARCFiles(paths []string) ([]string, error) {
	return expandDirs(paths, IsWARCName)
}

// OpenWARCFiles lists the WARC files still named *.open in the
// directories among paths (a crawl directory: in its warc/), which
// WARCFiles leaves out: files a running crawl writes, or that a crawl
// which did not close left (its next run repairs them).
func OpenWARCFiles(paths []string) ([]string, error) {
	var dirs []string
	for _, p := range paths {
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			dirs = append(dirs, p)
		}
	}
	return expandDirs(dirs, func(name string) bool {
		return IsWARCName(strings.TrimSuffix(name, openSuffix)) && strings.HasSuffix(name, openSuffix)
	})
}

// expandDirs expands paths as WARCFiles does, a directory into its files
// whose names match.
func expandDirs(paths []string, match func(name string) bool) ([]string, error) {
	var out []string
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("store: %w", err)
		}
		if !fi.IsDir() {
			out = append(out, p)
			continue
		}
		if sub, err := os.Stat(filepath.Join(p, "warc")); err == nil && sub.IsDir() {
			p = filepath.Join(p, "warc")
		}
		ents, err := os.ReadDir(p)
		if err != nil {
			return nil, fmt.Errorf("store: %w", err)
		}
		for _, e := range ents {
			if n := e.Name(); !e.IsDir() && match(n) {
				out = append(out, filepath.Join(p, n))
			}
		}
	}
	return out, nil
}

// IsWARCName reports whether a file name is that of a finished WARC file.
func IsWARCName(name string) bool {
	return strings.HasSuffix(name, ".warc.gz") || strings.HasSuffix(name, ".warc")
}

// fileIndexName returns the name of the CDXJ index kept beside a WARC file:
// NAME.cdxj for NAME.warc.gz or NAME.warc.
func fileIndexName(warcPath string) string {
	p := strings.TrimSuffix(warcPath, openSuffix)
	p = strings.TrimSuffix(strings.TrimSuffix(p, ".gz"), ".warc")
	return p + ".cdxj"
}

// WriteCDXJ writes one CDXJ index of the WARC files named by paths (files,
// or directories as WARCFiles expands them) to w, sorted as a whole by the
// bytes of its lines (LC_ALL=C order), as pywb and the WACZ format need.
// Each file is read with gowarc; memory stays within a bound however many
// records there are (runs spill to temporary files in os.TempDir()). o
// says whether lines get languages. It backs "petrel warc cdxj".
func WriteCDXJ(paths []string, w io.Writer, o IndexOptions) error {
	files, err := WARCFiles(paths)
	if err != nil {
		return err
	}
	s := newLineSorter(os.TempDir(), defaultSortBudget)
	defer s.close()
	langs := newIndexLanguages(o)
	for _, p := range files {
		if err := indexRecords(p, langs, s.add); err != nil {
			return err
		}
	}
	if _, err := s.writeTo(w); err != nil {
		return fmt.Errorf("store: cdxj: %w", err)
	}
	return nil
}

// cdxjFields are the JSON fields of a CDXJ line.
type cdxjFields struct {
	URL      string   `json:"url"`
	Mime     string   `json:"mime"`
	Status   jsonText `json:"status"`
	Digest   string   `json:"digest"`
	Length   jsonText `json:"length"`
	Offset   jsonText `json:"offset"`
	Filename string   `json:"filename"`
}

// jsonText is a JSON string or number, as its text: indexers write a
// CDXJ line's status, length and offset as strings (pywb, warcio) or as
// numbers.
type jsonText string

func (t *jsonText) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] != '"' {
		var n json.Number
		if err := json.Unmarshal(b, &n); err != nil {
			return err
		}
		*t = jsonText(n)
		return nil
	}
	var s string
	err := json.Unmarshal(b, &s)
	*t = jsonText(s)
	return err
}

// parseCDXJFields reads the JSON of a CDXJ line: a flat object of
// strings and whole numbers without escapes (what indexers write) by a
// scan of its own, anything else with encoding/json, to the same result.
func parseCDXJFields(js []byte) (cdxjFields, error) {
	var f cdxjFields
	if scanFlatJSON(js, &f) {
		return f, nil
	}
	f = cdxjFields{}
	err := json.Unmarshal(js, &f)
	return f, err
}

// scanFlatJSON fills f from js when js is a JSON object whose keys are
// ASCII strings and whose values are strings or whole numbers, with no
// backslash anywhere and valid UTF-8; it reports false for anything else
// (f is then partly filled). Keys match f's fields case-insensitively and
// the last of a repeated key wins, as in encoding/json.
func scanFlatJSON(js []byte, f *cdxjFields) bool {
	if bytes.IndexByte(js, '\\') >= 0 || !utf8.Valid(js) {
		return false
	}
	s := bytes.TrimSpace(js)
	if len(s) < 2 || s[0] != '{' || s[len(s)-1] != '}' {
		return false
	}
	s = bytes.TrimSpace(s[1 : len(s)-1])
	for len(s) > 0 {
		key, rest, ok := scanJSONString(s)
		if !ok {
			return false
		}
		rest = bytes.TrimSpace(rest)
		if len(rest) == 0 || rest[0] != ':' {
			return false
		}
		rest = bytes.TrimSpace(rest[1:])
		val, str := []byte(nil), false
		if val, rest, str = scanJSONString(rest); !str {
			i := bytes.IndexAny(rest, ", \t\r\n")
			if i < 0 {
				i = len(rest)
			}
			val, rest = rest[:i], rest[i:]
			if !isJSONInteger(val) {
				return false
			}
		}
		if !setCDXJField(f, key, val, str) {
			return false
		}
		rest = bytes.TrimSpace(rest)
		if len(rest) > 0 {
			if rest[0] != ',' {
				return false
			}
			if rest = bytes.TrimSpace(rest[1:]); len(rest) == 0 {
				return false // a trailing comma
			}
		}
		s = rest
	}
	return true
}

// scanJSONString reads a JSON string without escapes at the start of s:
// its bytes and what follows it.
func scanJSONString(s []byte) (str, rest []byte, ok bool) {
	if len(s) == 0 || s[0] != '"' {
		return nil, s, false
	}
	end := bytes.IndexByte(s[1:], '"')
	if end < 0 {
		return nil, s, false
	}
	str = s[1 : 1+end]
	for _, c := range str {
		if c < 0x20 {
			return nil, s, false
		}
	}
	return str, s[2+end:], true
}

// isJSONInteger reports whether b is a JSON number without a fraction or
// exponent.
func isJSONInteger(b []byte) bool {
	b = bytes.TrimPrefix(b, []byte{'-'})
	if len(b) == 0 || (b[0] == '0' && len(b) > 1) {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// setCDXJField sets the field of f named key (case-insensitively) to val,
// a string (str) or a number; a number for a string field is refused, as
// encoding/json refuses it. Other keys are passed over.
func setCDXJField(f *cdxjFields, key, val []byte, str bool) bool {
	for _, c := range key {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	var dst *string
	switch k := string(key); {
	case strings.EqualFold(k, "url"):
		dst = &f.URL
	case strings.EqualFold(k, "mime"):
		dst = &f.Mime
	case strings.EqualFold(k, "digest"):
		dst = &f.Digest
	case strings.EqualFold(k, "filename"):
		dst = &f.Filename
	case strings.EqualFold(k, "status"):
		f.Status = jsonText(val)
	case strings.EqualFold(k, "length"):
		f.Length = jsonText(val)
	case strings.EqualFold(k, "offset"):
		f.Offset = jsonText(val)
	}
	if dst != nil {
		if !str {
			return false
		}
		*dst = string(val)
	}
	return true
}

// IndexFile writes the CDXJ index of the WARC file at path beside it
// (NAME.cdxj), as the writer does when it closes a file; o says whether
// lines get languages.
func IndexFile(path string, o IndexOptions) error {
	_, err := indexFile(path, newIndexLanguages(o))
	return err
}

// indexFile is IndexFile; unreadable says the error is the WARC file's:
// it cannot be read through (cut short, corrupt).
func indexFile(path string, langs *indexLanguages) (unreadable bool, err error) {
	s := newLineSorter(filepath.Dir(path), defaultSortBudget)
	defer s.close()
	var addErr error // the sorter's: not the WARC file's
	add := func(line []byte) error { addErr = s.add(line); return addErr }
	if err := indexRecords(path, langs, add); err != nil {
		return addErr == nil, err
	}
	err = atomicfile.Write(fileIndexName(path), atomicfile.Options{Sync: true, Buffer: 256 << 10}, func(w io.Writer) error { _, err := s.writeTo(w); return err })
	if err != nil {
		return false, fmt.Errorf("store: index %s: %w", filepath.Base(path), err)
	}
	return false, nil
}

// MergedIndex is the path of a crawl directory's merged index.
func MergedIndex(crawlDir string) string {
	return filepath.Join(crawlDir, "indexes", "index.cdxj")
}

// IndexReport is what IndexCrawl did.
type IndexReport struct {
	Lines int64 // in the merged index
	// Skipped are the WARC files left out of the index because they
	// cannot be read through (a file cut short, corrupt bytes): each
	// error names its file and what is wrong with it.
	Skipped []error
}

// IndexCrawl brings the CDXJ indexes of the crawl directory dir up to date:
// every finished WARC file in dir/warc whose NAME.cdxj is missing or older
// than the file gets one (from the file itself), then indexes/index.cdxj is
// written (through a temporary file, renamed) as the merge of all of them,
// sorted by the bytes of its lines. A WARC file that cannot be read
// through is left out and named in the report's Skipped; the error is for
// what keeps the index from being written. o says whether the lines of
// the per-file indexes made get languages. It backs "petrel warc index"
// and runs at the end of a crawl.
func IndexCrawl(dir string, o IndexOptions) (IndexReport, error) {
	var rep IndexReport
	warcDir := filepath.Join(dir, "warc")
	files, err := WARCFiles([]string{warcDir})
	if err != nil {
		return rep, err
	}
	langs := newIndexLanguages(o)
	var inputs []io.Reader
	defer func() {
		for _, in := range inputs {
			in.(*os.File).Close()
		}
	}()
	for _, p := range files {
		idx := fileIndexName(p)
		if !indexCurrent(p, idx) {
			if unreadable, err := indexFile(p, langs); unreadable {
				rep.Skipped = append(rep.Skipped, err)
				continue
			} else if err != nil {
				return rep, err
			}
		}
		f, err := os.Open(idx)
		if err != nil {
			return rep, fmt.Errorf("store: %w", err)
		}
		inputs = append(inputs, f)
	}
	out := MergedIndex(dir)
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return rep, fmt.Errorf("store: %w", err)
	}
	err = atomicfile.Write(out, atomicfile.Options{Sync: true, Buffer: 256 << 10}, func(w io.Writer) error {
		var err error
		rep.Lines, err = MergeSorted(inputs, w)
		return err
	})
	if err != nil {
		return rep, fmt.Errorf("store: index %s: %w", out, err)
	}
	return rep, nil
}

// indexCurrent reports whether idx exists and is not older than the WARC
// file it indexes.
func indexCurrent(warcPath, idx string) bool {
	wi, err := os.Stat(warcPath)
	if err != nil {
		return false
	}
	ii, err := os.Stat(idx)
	return err == nil && !ii.ModTime().Before(wi.ModTime())
}

// WarcioPath returns the warcio command used to check indexes: the
// PETREL_WARCIO environment variable, "warcio" on the PATH, or the copy
// .ci/run installs under /opt/petrel-tools; "" when there is none.
func WarcioPath() string {
	if p := os.Getenv("PETREL_WARCIO"); p != "" {
		return p
	}
	if p, err := exec.LookPath("warcio"); err == nil {
		return p
	}
	const opt = "/opt/petrel-tools/node_modules/.bin/warcio"
	if _, err := os.Stat(opt); err == nil {
		return opt
	}
	return ""
}

// AppendJSONString appends s to b as a JSON string, quoted as
// JSON.stringify quotes it (invalid UTF-8 becomes U+FFFD).
func AppendJSONString(b []byte, s string) []byte { return appendJSString(b, s) }
