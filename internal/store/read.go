package store

import (
	"bufio"
	"crypto/sha1"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	gowarc "github.com/nlnwa/gowarc/v3"
)

// maxCheckPayload bounds the payload CheckFile reads into memory to verify
// the de-chunked payload digest of a chunked response.
const maxCheckPayload = 256 << 20

// RecordInfo describes one record for "petrel warc ls".
type RecordInfo struct {
	File          string `json:"file"`
	Offset        int64  `json:"offset"`
	Type          string `json:"type"`
	Status        int    `json:"status,omitempty"` // HTTP status of a response or revisit
	Date          string `json:"date"`
	URL           string `json:"url,omitempty"`
	ContentLength int64  `json:"content_length"` // of the record's block
	PayloadDigest string `json:"payload_digest,omitempty"`
	Truncated     string `json:"truncated,omitempty"`
}

// lsHeader is the first line of ListRecords's table.
const lsHeader = "OFFSET     TYPE     STATUS DATE                        LENGTH     PAYLOAD-DIGEST                        URL"

// ListRecords reads the WARC files named by paths (files, or directories as
// WARCFiles expands them) with gowarc and prints one line per record to w:
// a header line, then offset, type, HTTP status (or "-"), WARC-Date,
// Content-Length, payload digest (or "-") and target URI (or "-"); with
// more than one file, each file's records follow a "# FILE" line. With
// asJSON it prints one RecordInfo object per line instead, and no header.
// It backs "petrel warc ls".
func ListRecords(paths []string, w io.Writer, asJSON bool) error {
	files, err := WARCFiles(paths)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	if !asJSON {
		fmt.Fprintln(bw, lsHeader)
	}
	for _, p := range files {
		if !asJSON && len(files) > 1 {
			fmt.Fprintf(bw, "# %s\n", p)
		}
		err := eachRecord(p, func(ri RecordInfo) error {
			if asJSON {
				return enc.Encode(ri)
			}
			status := "-"
			if ri.Status > 0 {
				status = strconv.Itoa(ri.Status)
			}
			_, err := fmt.Fprintf(bw, "%-10d %-8s %-6s %-27s %-10d %-37s %s\n", ri.Offset, ri.Type, status,
				ri.Date, ri.ContentLength, dash(ri.PayloadDigest), dash(ri.URL))
			return err
		})
		if err != nil {
			return err
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("store: ls: %w", err)
	}
	return nil
}

// openLenient opens the WARC file at path with gowarc for reading from
// offset, its syntax errors, spec violations and unknown record types
// ignored: records are read back whoever wrote them and judged by what
// they hold (CheckFile is the strict reading). gowarc then reads past
// each block without keeping it: a record's block holds only what its
// header's parse buffered (a few KiB). openBlocks keeps them.
func openLenient(path string, offset int64) (*gowarc.WarcFileReader, error) {
	return gowarc.NewWarcFileReader(path, offset,
		gowarc.WithSyntaxErrorPolicy(gowarc.ErrIgnore),
		gowarc.WithSpecViolationPolicy(gowarc.ErrIgnore),
		gowarc.WithUnknownRecordTypePolicy(gowarc.ErrIgnore))
}

// openBlocks is openLenient for readers of whole blocks: spec violations
// are warnings (in Record.Validation, not acted on), so that gowarc
// reads each block through its digest check and keeps it whole.
func openBlocks(path string, offset int64) (*gowarc.WarcFileReader, error) {
	return gowarc.NewWarcFileReader(path, offset,
		gowarc.WithSyntaxErrorPolicy(gowarc.ErrIgnore),
		gowarc.WithSpecViolationPolicy(gowarc.ErrWarn),
		gowarc.WithUnknownRecordTypePolicy(gowarc.ErrIgnore))
}

// Records is a WARC file open for reading its records leniently
// (openLenient).
type Records struct {
	path string
	r    *gowarc.WarcFileReader
}

// OpenRecords opens the WARC file at path for reading from offset. A
// record's block holds only its start (openLenient): enough for an HTTP
// header, not for a payload.
func OpenRecords(path string, offset int64) (*Records, error) {
	r, err := openLenient(path, offset)
	if err != nil {
		return nil, err
	}
	return &Records{path: path, r: r}, nil
}

// OpenRecordBlocks is OpenRecords for reading the records' whole blocks
// (openBlocks).
func OpenRecordBlocks(path string, offset int64) (*Records, error) {
	r, err := openBlocks(path, offset)
	if err != nil {
		return nil, err
	}
	return &Records{path: path, r: r}, nil
}

// Close closes the file.
func (rs *Records) Close() error { return rs.r.Close() }

// Each calls fn with each record in file order, closing it after, until
// the end of the file. An error of fn is returned as is; one reading the
// file as "WHAT PATH: offset N: error" (what names the caller's work,
// e.g. "store: ls ").
func (rs *Records) Each(what string, fn func(gowarc.Record) error) error {
	for {
		rec, err := rs.r.Next()
		if err == io.EOF { // gowarc wraps io.EOF in errors about a record: only a bare one ends the file
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s%s: offset %d: %w", what, rs.path, rec.Offset, err)
		}
		err = fn(rec)
		_ = rec.Close()
		if err != nil {
			return err
		}
	}
}

// EachRecord opens the WARC file at path and calls fn with each of its
// records from offset (Records.Each); an error opening it is returned as
// "WHAT PATH: error".
func EachRecord(path string, offset int64, what string, fn func(gowarc.Record) error) error {
	rs, err := OpenRecords(path, offset)
	if err != nil {
		return fmt.Errorf("%s%s: %w", what, path, err)
	}
	defer rs.Close()
	return rs.Each(what, fn)
}

// eachRecord calls fn with the description of every record of the WARC file
// at path, in file order.
func eachRecord(path string, fn func(RecordInfo) error) error {
	file := filepath.Base(path)
	return EachRecord(path, 0, "store: ls ", func(rec gowarc.Record) error {
		wr := rec.WarcRecord
		h := wr.WarcHeader()
		length, _ := wr.ContentLength()
		ri := RecordInfo{
			File:          file,
			Offset:        rec.Offset,
			Type:          wr.Type().String(),
			Date:          h.Get(gowarc.WarcDate),
			URL:           h.Get(gowarc.WarcTargetURI),
			ContentLength: length,
			PayloadDigest: h.Get(gowarc.WarcPayloadDigest),
			Truncated:     h.Get(gowarc.WarcTruncated),
		}
		if t := wr.Type(); t == gowarc.Response || t == gowarc.Revisit {
			if blk, ok := wr.Block().(gowarc.ProtocolHeaderBlock); ok {
				ri.Status = parseResponse(blk.ProtocolHeaderBytes()).status
			}
		}
		return fn(ri)
	})
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// CheckFile reads the whole WARC file at path with gowarc, which checks
// syntax, required fields, Content-Length, gzip checksums, block digests and
// payload digests. gowarc digests the payload of a chunked response as
// transferred, whereas Petrel (like warcio) digests the de-chunked payload;
// for those records CheckFile verifies the de-chunked digest itself. It
// returns the number of records read and the first problem found.
func CheckFile(path string) (records int, err error) {
	r, err := gowarc.NewWarcFileReader(path, 0,
		gowarc.WithSyntaxErrorPolicy(gowarc.ErrWarn),
		gowarc.WithSpecViolationPolicy(gowarc.ErrWarn),
		gowarc.WithUnknownRecordTypePolicy(gowarc.ErrFail),
		gowarc.WithBlockErrorPolicy(gowarc.ErrWarn))
	if err != nil {
		return 0, fmt.Errorf("store: check %s: %w", path, err)
	}
	defer r.Close()
	for {
		rec, err := r.Next()
		if err == io.EOF { // gowarc wraps io.EOF in errors about a record: only a bare one ends the file
			return records, nil
		}
		if err != nil {
			return records, fmt.Errorf("store: check %s: offset %d: %w", path, rec.Offset, err)
		}
		verr := checkRecord(rec)
		_ = rec.Close()
		if verr != nil {
			return records, fmt.Errorf("store: check %s: offset %d: %w", path, rec.Offset, verr)
		}
		records++
	}
}

// checkRecord judges gowarc's findings on one record.
func checkRecord(rec gowarc.Record) error {
	wr := rec.WarcRecord
	var problems []error
	for _, v := range rec.Validation {
		var de *gowarc.DigestError
		if errors.As(v, &de) && strings.HasPrefix(v.Error(), "payload:") && wr.Type() == gowarc.Response {
			if blk, ok := wr.Block().(gowarc.HttpResponseBlock); ok && isChunked(blk) {
				if err := checkDechunked(blk, wr.WarcHeader().Get(gowarc.WarcPayloadDigest)); err != nil {
					problems = append(problems, err)
				}
				continue
			}
		}
		problems = append(problems, v)
	}
	return errors.Join(problems...)
}

// isChunked reports whether blk's HTTP header declares a chunked body.
// (net/http, which gowarc parses with, moves Transfer-Encoding out of the
// header map, so read the raw header.)
func isChunked(blk gowarc.HttpResponseBlock) bool {
	return parseResponse(blk.ProtocolHeaderBytes()).chunked
}

// checkDechunked verifies want against the de-chunked payload of blk.
func checkDechunked(blk gowarc.HttpResponseBlock, want string) error {
	pr, err := blk.PayloadBytes()
	if err != nil {
		return fmt.Errorf("payload: %w", err)
	}
	body, err := io.ReadAll(io.LimitReader(pr, maxCheckPayload+1))
	if err != nil {
		return fmt.Errorf("payload: %w", err)
	}
	if len(body) > maxCheckPayload {
		return fmt.Errorf("payload: chunked payload over %d bytes not checked", maxCheckPayload)
	}
	h := sha1.New()
	if !dechunk(h, body) {
		h.Reset()
		h.Write(body)
	}
	if got := sha1Digest(h.Sum(nil)); !strings.EqualFold(got, want) {
		return fmt.Errorf("payload: wrong de-chunked digest: expected %s, computed %s", want, got)
	}
	return nil
}

// indexRecords reads the WARC file at path with gowarc and calls add with
// the CDXJ line (without a line break) of each response and revisit record,
// in file order.
func indexRecords(path string, langs *indexLanguages, add func([]byte) error) error {
	filename := strings.TrimSuffix(filepath.Base(path), openSuffix)
	open := OpenRecords
	if langs != nil { // the languages are in the payloads
		open = OpenRecordBlocks
	}
	rs, err := open(path, 0)
	if err != nil {
		return fmt.Errorf("store: cdxj %s: %w", path, err)
	}
	defer rs.Close()
	return rs.Each("store: cdxj ", func(rec gowarc.Record) error {
		if e, ok := recordEntry(rec, filename, langs); ok {
			return add(e.line())
		}
		return nil
	})
}

// recordEntry builds the index entry of a response or revisit record,
// with the languages langs finds.
func recordEntry(rec gowarc.Record, filename string, langs *indexLanguages) (indexEntry, bool) {
	wr := rec.WarcRecord
	typ := wr.Type()
	if typ != gowarc.Response && typ != gowarc.Revisit {
		return indexEntry{}, false
	}
	h := wr.WarcHeader()
	uri := h.Get(gowarc.WarcTargetURI)
	date, err := time.Parse(time.RFC3339Nano, h.Get(gowarc.WarcDate))
	if uri == "" || err != nil {
		return indexEntry{}, false
	}
	e := indexEntry{
		uri:      uri,
		date:     date,
		digest:   strings.TrimPrefix(h.Get(gowarc.WarcPayloadDigest), "sha1:"),
		length:   rec.Size,
		offset:   rec.Offset,
		filename: filename,
	}
	if typ == gowarc.Revisit {
		e.mime = "warc/revisit"
	}
	// Parse the HTTP header ourselves: gowarc keeps a revisit block's
	// header unparsed.
	if blk, ok := wr.Block().(gowarc.ProtocolHeaderBlock); ok {
		resp := parseResponse(blk.ProtocolHeaderBytes())
		e.status = resp.status
		if typ == gowarc.Response {
			e.mime = resp.mime
		}
	}
	e.langs = langs.record(wr, uri, e.status)
	if typ == gowarc.Revisit && h.Get(gowarc.WarcProfile) == gowarc.ProfileServerNotModifiedV1_1 {
		e.status = notModifiedIndexStatus
	}
	return e, true
}
