package store

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"time"

	gowarc "github.com/nlnwa/gowarc/v3"

	"github.com/petrel-crawler/petrel/internal/ascii"
)

// FetchRecord is what a response or revisit record says of the fetch it
// stores: enough to account for that fetch from the record alone (the
// revisit schedule does so after a crash).
type FetchRecord struct {
	URL           string    // WARC-Target-URI
	Date          time.Time // WARC-Date (the request's start, to the microsecond)
	RecordID      string    // WARC-Record-ID, "<urn:uuid:...>"
	Revisit       bool      // a revisit record: its block is the HTTP header only
	Status        int       // the HTTP status (0: unreadable)
	PayloadDigest string    // WARC-Payload-Digest, "sha1:BASE32" ("" for a 304's revisit record)
	ETag          string    // the HTTP response's ETag ("" none)
	LastModified  string    // the HTTP response's Last-Modified, as sent ("" none)
	// Bytes is the response's size as received: the record's block for a
	// response record; for a revisit record its HTTP header plus the
	// Content-Length that header announces (the body left out).
	Bytes int64
}

// EachFetchRecord calls fn with the FetchRecord of every response and
// revisit record, in file order, of the WARC files WARCFiles finds in
// paths that were last modified at or after since (a file not written
// since holds no record dated after it). A path that does not exist holds
// no file. A file that cannot be read through is an error: the walk goes
// on with the next file (fn has seen the records before the unreadable
// one), and the errors are returned together at the end. An error of fn
// stops the walk and is returned.
func EachFetchRecord(paths []string, since time.Time, fn func(FetchRecord) error) error {
	var existing []string
	for _, p := range paths {
		if _, err := os.Stat(p); err == nil {
			existing = append(existing, p)
		}
	}
	files, err := WARCFiles(existing)
	if err != nil {
		return err
	}
	var errs []error
	for _, p := range files {
		fi, err := os.Stat(p)
		if err != nil || fi.ModTime().Before(since) {
			continue
		}
		if err := eachFetchRecord(p, fn); err != nil {
			var fe fnError
			if errors.As(err, &fe) {
				return fe.err
			}
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// fnError carries an error of EachFetchRecord's fn out of
// eachFetchRecord.
type fnError struct{ err error }

func (e fnError) Error() string { return e.err.Error() }

// eachFetchRecord calls fn with the FetchRecord of every response and
// revisit record of the WARC file at path.
func eachFetchRecord(path string, fn func(FetchRecord) error) error {
	return EachRecord(path, 0, "store: fetch records ", func(rec gowarc.Record) error {
		c, ok := fetchRecordOf(rec)
		if !ok {
			return nil
		}
		if err := fn(c); err != nil {
			return fnError{err}
		}
		return nil
	})
}

// fetchRecordOf returns the FetchRecord of a response or revisit record;
// false for any other record, or one without a target URI or a readable
// date.
func fetchRecordOf(rec gowarc.Record) (FetchRecord, bool) {
	wr := rec.WarcRecord
	typ := wr.Type()
	if typ != gowarc.Response && typ != gowarc.Revisit {
		return FetchRecord{}, false
	}
	h := wr.WarcHeader()
	date, err := time.Parse(time.RFC3339Nano, h.Get(gowarc.WarcDate))
	c := FetchRecord{URL: h.Get(gowarc.WarcTargetURI), Date: date, RecordID: h.Get(gowarc.WarcRecordID),
		Revisit: typ == gowarc.Revisit, PayloadDigest: h.Get(gowarc.WarcPayloadDigest)}
	if c.URL == "" || err != nil {
		return FetchRecord{}, false
	}
	c.Bytes, _ = wr.ContentLength()
	// Parse the HTTP header ourselves: gowarc keeps a revisit block's
	// header unparsed.
	if blk, ok := wr.Block().(gowarc.ProtocolHeaderBlock); ok {
		head := blk.ProtocolHeaderBytes()
		c.Status = parseResponse(head).status
		c.ETag, c.LastModified = headerValue(head, "etag"), headerValue(head, "last-modified")
		if n, err := strconv.ParseInt(headerValue(head, "content-length"), 10, 64); c.Revisit && err == nil && n > 0 {
			c.Bytes += n
		}
	}
	return c, true
}

// headerValue returns the value of the first field called name (lower
// case) of an HTTP header block, trimmed; "" when it has none.
func headerValue(header []byte, name string) string {
	_, rest := cutLine(header) // the status line
	for len(rest) > 0 {
		var line []byte
		line, rest = cutLine(rest)
		colon := bytes.IndexByte(line, ':')
		if colon > 0 && ascii.EqualFold(bytes.TrimSpace(line[:colon]), name) {
			return string(bytes.TrimSpace(line[colon+1:]))
		}
	}
	return ""
}
