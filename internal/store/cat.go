package store

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/petrel-crawler/petrel/internal/fetch"
)

// ErrNotArchived is returned (wrapped) by FindCapture when no response or
// revisit record of the URL is in the archive.
var ErrNotArchived = errors.New("not in the archive")

// MaxCatBody bounds the decoded payload ReadPayload returns.
const MaxCatBody = 1 << 30

// Capture locates one response or revisit record.
type Capture struct {
	Path   string // the WARC file
	Offset int64  // of the record's gzip member (or of the record, uncompressed)
	URI    string
	Date   time.Time
	Digest string // payload digest without "sha1:"
	Type   string // "response" or "revisit"
}

// Archive is what "petrel warc cat" searches: the WARC files of a crawl
// directory (through its merged index when there is one) or a list of
// files.
type Archive struct {
	// Index is a merged CDXJ index (indexes/index.cdxj), or "" to read the
	// WARC files themselves.
	Index string
	// WARCDir is where the index's file names are found.
	WARCDir string
	// Files are read when Index is "".
	Files []string
}

// OpenArchive describes the archive of a crawl directory (or of a bare
// directory of WARC files): its merged index if it exists, else its WARC
// files.
func OpenArchive(dir string) (Archive, error) {
	warcDir := filepath.Join(dir, "warc")
	if fi, err := os.Stat(warcDir); err != nil || !fi.IsDir() {
		warcDir = dir
	}
	idx := filepath.Join(dir, "indexes", "index.cdxj")
	if _, err := os.Stat(idx); err == nil {
		return Archive{Index: idx, WARCDir: warcDir}, nil
	}
	files, err := WARCFiles([]string{warcDir})
	if err != nil {
		return Archive{}, err
	}
	return Archive{WARCDir: warcDir, Files: files}, nil
}

// Captures returns every response and revisit record of uri (compared by
// SURT key, so "http://Example.test/?b=1&a=2" finds "http://example.test/?a=2&b=1"),
// oldest first.
func (a Archive) Captures(uri string) ([]Capture, error) {
	key := SURT(uri)
	var out []Capture
	var err error
	if a.Index != "" {
		out, err = a.indexCaptures(key)
	} else {
		for _, p := range a.Files {
			err = indexRecords(p, nil, func(line []byte) error {
				if c, ok := parseCDXJCapture(line, key); ok {
					c.Path = p
					out = append(out, c)
				}
				return nil
			})
			if err != nil {
				break
			}
		}
	}
	if err != nil {
		return nil, err
	}
	sortCaptures(out)
	return out, nil
}

// indexCaptures reads the captures of key from the merged index, which is
// sorted: the scan stops at the first key past it.
func (a Archive) indexCaptures(key string) ([]Capture, error) {
	f, err := os.Open(a.Index)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	defer f.Close()
	var out []Capture
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		k, _, _ := bytes.Cut(line, []byte{' '})
		if string(k) > key {
			break
		}
		if c, ok := parseCDXJCapture(line, key); ok {
			c.Path = filepath.Join(a.WARCDir, c.Path)
			out = append(out, c)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("store: %s: %w", a.Index, err)
	}
	return out, nil
}

func sortCaptures(cs []Capture) {
	for i := 1; i < len(cs); i++ { // few captures: insertion sort, stable
		for j := i; j > 0 && cs[j].Date.Before(cs[j-1].Date); j-- {
			cs[j], cs[j-1] = cs[j-1], cs[j]
		}
	}
}

// parseCDXJCapture reads a CDXJ line whose key is key. Its Path is the
// line's file name.
func parseCDXJCapture(line []byte, key string) (Capture, bool) {
	k, rest, ok := bytes.Cut(line, []byte{' '})
	if !ok || string(k) != key {
		return Capture{}, false
	}
	stamp, js, ok := bytes.Cut(rest, []byte{' '})
	if !ok {
		return Capture{}, false
	}
	f, err := parseCDXJFields(js)
	if err != nil {
		return Capture{}, false
	}
	date, err := time.Parse("20060102150405", string(stamp))
	if err != nil {
		return Capture{}, false
	}
	off, err := strconv.ParseInt(string(f.Offset), 10, 64)
	if err != nil {
		return Capture{}, false
	}
	typ := "response"
	if f.Mime == "warc/revisit" {
		typ = "revisit"
	}
	return Capture{Path: f.Filename, Offset: off, URI: f.URL, Date: date, Digest: f.Digest, Type: typ}, true
}

// FindCapture picks the capture of uri closest to date (the latest when
// date is zero). A URL with no capture is an error wrapping ErrNotArchived.
func (a Archive) FindCapture(uri string, date time.Time) (Capture, error) {
	cs, err := a.Captures(uri)
	if err != nil {
		return Capture{}, err
	}
	if len(cs) == 0 {
		return Capture{}, fmt.Errorf("%s: %w", uri, ErrNotArchived)
	}
	if date.IsZero() {
		return cs[len(cs)-1], nil
	}
	best := cs[0]
	for _, c := range cs[1:] {
		if absDur(c.Date.Sub(date)) < absDur(best.Date.Sub(date)) {
			best = c
		}
	}
	return best, nil
}

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// ParseCaptureDate reads a --date value: a 14-digit timestamp or a prefix
// of one (20240102, 202401021530), or an RFC 3339 time.
func ParseCaptureDate(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	const full = "20060102150405"
	if len(s) >= 4 && len(s) <= len(full) && len(s)%2 == 0 {
		if t, err := time.Parse(full[:len(s)], s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("date %q: want YYYYMMDD[hhmmss] or RFC 3339", s)
}

// ReadRecord returns the WARC record at offset in the WARC file at path,
// as stored (header and block, uncompressed), the closing blank lines
// included.
func ReadRecord(path string, offset int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	defer f.Close()
	rec, err := ReadRecordAt(f, offset)
	if err != nil {
		return nil, fmt.Errorf("store: %s: offset %d: %w", path, offset, err)
	}
	return rec, nil
}

// readOneRecord reads one WARC record from r: its header up to the blank
// line, Content-Length bytes of block, and the two line breaks after it.
func readOneRecord(r *bufio.Reader) ([]byte, error) {
	var rec []byte
	length := int64(-1)
	for first := true; ; first = false {
		line, err := r.ReadSlice('\n')
		if err != nil {
			return nil, fmt.Errorf("WARC header: %w", err)
		}
		if first && !bytes.HasPrefix(line, []byte("WARC/")) {
			return nil, errors.New("no WARC record here")
		}
		rec = append(rec, line...)
		trimmed := bytes.TrimRight(line, "\r\n")
		if len(trimmed) == 0 {
			break
		}
		if name, value, ok := bytes.Cut(trimmed, []byte{':'}); ok && strings.EqualFold(string(bytes.TrimSpace(name)), "Content-Length") {
			length, err = strconv.ParseInt(string(bytes.TrimSpace(value)), 10, 64)
			if err != nil || length < 0 {
				return nil, fmt.Errorf("bad Content-Length %q", value)
			}
		}
	}
	if length < 0 {
		return nil, errors.New("WARC header without Content-Length")
	}
	if length > MaxCatBody {
		return nil, fmt.Errorf("record block of %d bytes is over %d", length, MaxCatBody)
	}
	block := make([]byte, length+4)
	n, err := io.ReadFull(r, block)
	if err != nil && !(errors.Is(err, io.ErrUnexpectedEOF) && int64(n) >= length) {
		return nil, fmt.Errorf("record block: %w", err)
	}
	return append(rec, block[:n]...), nil
}

// splitRecord returns the WARC header fields and the block of a record
// read by ReadRecord.
func splitRecord(rec []byte) (http.Header, []byte) {
	end := headerEnd(rec)
	if end < 0 {
		return http.Header{}, nil
	}
	h := parseFields(rec[:end])
	block := rec[end:]
	if n, err := strconv.Atoi(h.Get("Content-Length")); err == nil && n <= len(block) {
		block = block[:n]
	}
	return h, block
}

// parseFields reads "Name: value" lines (the first line, a WARC or HTTP
// start line, is skipped).
func parseFields(b []byte) http.Header {
	h := http.Header{}
	_, rest := cutLine(b)
	for len(rest) > 0 {
		var line []byte
		line, rest = cutLine(rest)
		if name, value, ok := bytes.Cut(line, []byte{':'}); ok {
			h.Add(string(bytes.TrimSpace(name)), string(bytes.TrimSpace(value)))
		}
	}
	return h
}

// DecodeResponse decodes the block of a response record (an HTTP
// response as transferred) whose WARC-Truncated is truncated: its header,
// and its body de-chunked and with its Content-Encoding undone, at most
// max bytes of it.
func DecodeResponse(block []byte, truncated string, max int64) Payload {
	return DecodeResponseWith(block, truncated, max, decodeBody)
}

// BodyDecoder undoes the Content-Encoding of a de-chunked body whose
// response header is h, as fetch.DecodeBody does, keeping at most max
// bytes.
type BodyDecoder func(h http.Header, body []byte, max int64) ([]byte, error)

// decodeBody is the BodyDecoder of DecodeResponse: fetch.DecodeBody with
// decompressors of its own.
func decodeBody(h http.Header, body []byte, max int64) ([]byte, error) {
	return fetch.DecodeBody(&fetch.Response{Header: h, Body: body}, max)
}

// DecodeResponseWith is DecodeResponse with the body's Content-Encoding
// undone by decode (one that gives what fetch.DecodeBody gives, e.g. with
// a fetcher's pooled decompressors).
func DecodeResponseWith(block []byte, truncated string, max int64, decode BodyDecoder) Payload {
	resp := parseResponse(block)
	body := resp.body
	if resp.chunked {
		var b bytes.Buffer
		if dechunk(&b, body) {
			body = b.Bytes()
		}
	}
	p := Payload{Status: resp.status, Header: parseFields(resp.header), RawHeader: resp.header, Truncated: truncated}
	p.Body, p.Err = decode(p.Header, body, max)
	return p
}

// Payload is the content of a response record, decoded.
type Payload struct {
	Status    int
	Header    http.Header // the HTTP response header
	RawHeader []byte      // the HTTP response header as transferred: status line, fields, blank line
	Body      []byte      // chunking and Content-Encoding undone
	Truncated string      // the record's WARC-Truncated, if any
	Err       error       // a decoding problem (the body holds what decoded)
}

// ReadPayload returns the decoded payload of the response record at offset
// in path. A revisit record's payload is read from the record it refers
// to, found in a (its WARC-Refers-To-Target-URI and WARC-Refers-To-Date,
// or else a response of the same URL with the same payload digest).
func (a Archive) ReadPayload(path string, offset int64) (Payload, error) {
	rec, err := ReadRecord(path, offset)
	if err != nil {
		return Payload{}, err
	}
	wh, block := splitRecord(rec)
	switch wh.Get("WARC-Type") {
	case "response":
	case "revisit":
		orig, err := a.original(wh)
		if err != nil {
			return Payload{}, err
		}
		return a.ReadPayload(orig.Path, orig.Offset)
	default:
		return Payload{}, fmt.Errorf("store: %s: offset %d: a %s record has no HTTP payload", path, offset, wh.Get("WARC-Type"))
	}
	return DecodeResponse(block, wh.Get("WARC-Truncated"), MaxCatBody), nil
}

// original finds the response record a revisit record refers to.
func (a Archive) original(wh http.Header) (Capture, error) {
	uri := wh.Get("WARC-Refers-To-Target-URI")
	if uri == "" {
		uri = wh.Get("WARC-Target-URI")
	}
	digest := strings.TrimPrefix(wh.Get("WARC-Payload-Digest"), "sha1:")
	var when time.Time
	if d := wh.Get("WARC-Refers-To-Date"); d != "" {
		when, _ = time.Parse(time.RFC3339Nano, d)
	}
	cs, err := a.Captures(uri)
	if err != nil {
		return Capture{}, err
	}
	for _, c := range cs {
		if c.Type == "response" && c.Digest == digest && (when.IsZero() || c.Date.Equal(when.Truncate(time.Second))) {
			return c, nil
		}
	}
	return Capture{}, fmt.Errorf("store: revisit of %s: the record it refers to is %w", uri, ErrNotArchived)
}

// ReadRecordAt is ReadRecord on a file already open (or a stored ZIP
// entry): the record whose gzip member (or uncompressed record) starts at
// offset in r.
func ReadRecordAt(r io.ReaderAt, offset int64) ([]byte, error) {
	br := bufio.NewReader(io.NewSectionReader(r, offset, 1<<62))
	magic, _ := br.Peek(2)
	var src io.Reader = br
	if bytes.Equal(magic, []byte{0x1f, 0x8b}) {
		gz, err := gzip.NewReader(br)
		if err != nil {
			return nil, err
		}
		gz.Multistream(false)
		src = gz
	}
	return readOneRecord(bufio.NewReader(src))
}

// RecordFields returns the WARC header fields of a record read by
// ReadRecord or ReadRecordAt.
func RecordFields(rec []byte) http.Header {
	h, _ := splitRecord(rec)
	return h
}
