package store

import (
	"bufio"
	"crypto/sha1"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	gowarc "github.com/nlnwa/gowarc/v3"
)

// maxCheckPayload bounds the payload CheckFile reads into memory to verify
// the de-chunked payload digest of a chunked response.
const maxCheckPayload = 256 << 20

// ListRecords reads the WARC file at path with gowarc and prints one line
// per record to w: type, target URI (or "-"), WARC-Date, Content-Length,
// payload digest (or "-"), and the record's offset in the file, separated
// by single spaces. It backs "petrel warc ls FILE".
func ListRecords(path string, w io.Writer) error {
	r, err := gowarc.NewWarcFileReader(path, 0,
		gowarc.WithSyntaxErrorPolicy(gowarc.ErrIgnore),
		gowarc.WithSpecViolationPolicy(gowarc.ErrIgnore),
		gowarc.WithUnknownRecordTypePolicy(gowarc.ErrIgnore))
	if err != nil {
		return fmt.Errorf("store: ls %s: %w", path, err)
	}
	defer r.Close()
	bw := bufio.NewWriter(w)
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("store: ls %s: offset %d: %w", path, rec.Offset, err)
		}
		h := rec.WarcRecord.WarcHeader()
		length, _ := rec.WarcRecord.ContentLength()
		fmt.Fprintf(bw, "%s %s %s %d %s %d\n", rec.WarcRecord.Type(),
			dash(h.Get(gowarc.WarcTargetURI)), h.Get(gowarc.WarcDate), length,
			dash(h.Get(gowarc.WarcPayloadDigest)), rec.Offset)
		_ = rec.Close()
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("store: ls %s: %w", path, err)
	}
	return nil
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
		if errors.Is(err, io.EOF) {
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

// cdxjLine is one CDXJ index entry before sorting.
type cdxjLine struct {
	key, stamp string
	json       []byte
}

// WriteCDXJ reads the WARC file at path with gowarc and writes a CDXJ index
// of its response and revisit records to w, sorted by SURT key and
// timestamp, in the form pywb reads:
//
//	com,example)/a?b=c 20240102030405 {"url":"...","mime":"text/html","status":"200","digest":"BASE32","length":"1234","offset":"0","filename":"petrel-....warc.gz"}
//
// The index of one file is built in memory (about 200 bytes per record).
// It backs "petrel warc cdxj".
func WriteCDXJ(path string, w io.Writer) error {
	r, err := gowarc.NewWarcFileReader(path, 0,
		gowarc.WithSyntaxErrorPolicy(gowarc.ErrIgnore),
		gowarc.WithSpecViolationPolicy(gowarc.ErrIgnore),
		gowarc.WithUnknownRecordTypePolicy(gowarc.ErrIgnore))
	if err != nil {
		return fmt.Errorf("store: cdxj %s: %w", path, err)
	}
	defer r.Close()
	filename := strings.TrimSuffix(filepath.Base(path), ".open")
	var lines []cdxjLine
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("store: cdxj %s: offset %d: %w", path, rec.Offset, err)
		}
		line, ok := cdxjEntry(rec, filename)
		_ = rec.Close()
		if ok {
			lines = append(lines, line)
		}
	}
	slices.SortStableFunc(lines, func(a, b cdxjLine) int {
		if c := strings.Compare(a.key, b.key); c != 0 {
			return c
		}
		return strings.Compare(a.stamp, b.stamp)
	})
	bw := bufio.NewWriter(w)
	for _, l := range lines {
		bw.WriteString(l.key)
		bw.WriteByte(' ')
		bw.WriteString(l.stamp)
		bw.WriteByte(' ')
		bw.Write(l.json)
		bw.WriteByte('\n')
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("store: cdxj %s: %w", path, err)
	}
	return nil
}

// cdxjEntry builds the index entry of a response or revisit record.
func cdxjEntry(rec gowarc.Record, filename string) (cdxjLine, bool) {
	wr := rec.WarcRecord
	typ := wr.Type()
	if typ != gowarc.Response && typ != gowarc.Revisit {
		return cdxjLine{}, false
	}
	h := wr.WarcHeader()
	uri := h.Get(gowarc.WarcTargetURI)
	date, err := time.Parse(time.RFC3339Nano, h.Get(gowarc.WarcDate))
	if uri == "" || err != nil {
		return cdxjLine{}, false
	}
	mime, status := "", ""
	if typ == gowarc.Revisit {
		mime = "warc/revisit"
	}
	// Parse the HTTP header ourselves: gowarc keeps a revisit block's
	// header unparsed.
	if blk, ok := wr.Block().(gowarc.ProtocolHeaderBlock); ok {
		resp := parseResponse(blk.ProtocolHeaderBytes())
		if resp.status > 0 {
			status = strconv.Itoa(resp.status)
		}
		if typ == gowarc.Response {
			mime = resp.mime
		}
	}
	fields := struct {
		URL      string `json:"url"`
		Mime     string `json:"mime,omitempty"`
		Status   string `json:"status,omitempty"`
		Digest   string `json:"digest,omitempty"`
		Length   string `json:"length"`
		Offset   string `json:"offset"`
		Filename string `json:"filename"`
	}{
		URL:      uri,
		Mime:     mime,
		Status:   status,
		Digest:   strings.TrimPrefix(h.Get(gowarc.WarcPayloadDigest), "sha1:"),
		Length:   strconv.FormatInt(rec.Size, 10),
		Offset:   strconv.FormatInt(rec.Offset, 10),
		Filename: filename,
	}
	js, _ := json.Marshal(fields) // plain strings cannot fail
	return cdxjLine{key: SURT(uri), stamp: date.UTC().Format("20060102150405"), json: js}, true
}
