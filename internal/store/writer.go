package store

import (
	"bufio"
	"bytes"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/gzip"

	"github.com/petrel-crawler/petrel/internal/bloom"

	"github.com/petrel-crawler/petrel/internal/atomicfile"
)

// Defaults for Options.
const (
	DefaultPrefix               = "petrel"
	DefaultMaxFileBytes         = 1 << 30
	DefaultDigestsExpected      = 1 << 16
	DefaultDigestsFalsePositive = 1e-9
	DefaultRevisitRefs          = 1 << 16
	// DefaultGzipLevel is the compression level used when Options.GzipLevel
	// is 0. See the package documentation for the measurements behind it.
	DefaultGzipLevel = gzip.DefaultCompression
	// DefaultStoreBelow is the record size under which a record is stored
	// rather than compressed (Options.StoreBelow).
	DefaultStoreBelow = 1024
	// DefaultSyncEvery is how many bytes a file grows by between two of
	// its background syncs (Options.SyncEvery).
	DefaultSyncEvery = 64 << 20
)

// ErrClosed is returned by Write after Close.
var ErrClosed = errors.New("store: writer closed")

// Options configure a Writer. The zero value of every field selects its
// default.
type Options struct {
	// Dir is the crawl's warc/ directory; it is created if missing.
	Dir string
	// Prefix is the file name prefix, default "petrel". Files are named
	// PREFIX-YYYYMMDDhhmmss-NNNNN.warc.gz (NNNNN a serial), written as
	// .warc.gz.open and renamed when closed.
	Prefix string
	// MaxFileBytes rotates to a new file once a file holds at least this
	// many compressed bytes (default 1 GiB). The request and response of one
	// exchange always go to the same file.
	MaxFileBytes int64
	// SyncEvery starts a background fsync of the open file each time it
	// has grown by this many bytes since the last one started (default
	// 64 MiB; negative: sync only at rotation and Close); while one runs,
	// no other starts. The appender does not wait for it (but for the sync
	// at rotation and Close), so the operating system writes the file back
	// while the crawl goes on, and the sync at rotation or Close finds
	// little left to write: a stop does not wait for a whole file's write
	// back, and a crash loses about this much of
	// what the page cache held, plus what was written while the last sync
	// ran. A failed background sync is sticky, as a write error is.
	SyncEvery int64
	// Software names the crawler in the warcinfo record, e.g. "Petrel/0.1".
	Software string
	// Operator is an optional contact for the warcinfo record (a person
	// or organisation, and how to reach them).
	Operator string
	// IsPartOf names the crawl in the warcinfo record.
	IsPartOf string
	// Description is an optional free-text description of the crawl for
	// the warcinfo record.
	Description string
	// Robots is the robots.txt policy named in the warcinfo record
	// ("obey", "ignore"; "" omits the field).
	Robots string
	// UserAgent is the User-Agent header the crawler sends, recorded in the
	// warcinfo record as http-header-user-agent.
	UserAgent string
	// Compressors is the number of parallel gzip workers (default
	// runtime.GOMAXPROCS(0)).
	Compressors int
	// GzipLevel is the compress/gzip level; 0 selects DefaultGzipLevel
	// (no level stores every record; small records are stored, see
	// StoreBelow).
	GzipLevel int
	// StoreBelow: a record whose serialised length (header and block) is
	// below this many bytes is written in a stored (uncompressed) deflate
	// block of its gzip member. Building the Huffman tables of a compressed
	// block costs a few microseconds whatever the block's size, which small
	// records (requests, redirects, error pages) do not repay (BENCHMARKS.md
	// has what it saves). So are the WARC and HTTP headers, when below it,
	// of a response whose body is stored (member.go). 0 selects
	// DefaultStoreBelow; a negative value compresses every record.
	StoreBelow int
	// DigestsExpected is the capacity of the first stage of the scalable
	// Bloom filter of payload digests (default 65536, 350 KiB at 1e-9); it
	// grows by stages of twice the size as payloads are added.
	DigestsExpected uint
	// DigestsFalsePositive is the filter's compound false-positive budget
	// (default 1e-9), over all its stages. A false positive would turn a
	// unique page into a revisit record, losing its payload, so keep it
	// tiny (and a revisit needs its first capture remembered, so a false
	// positive beyond the remembered digests is stored in full anyway).
	DigestsFalsePositive float64
	// RevisitRefs bounds how many payload digests remember the URI, date
	// and record ID of their first capture, for WARC-Refers-To* fields
	// (default 65536; oldest forgotten first).
	RevisitRefs int
	// Index writes a CDXJ index beside each WARC file: NAME.cdxj for
	// NAME.warc.gz, sorted as "petrel warc cdxj" sorts (see index.go),
	// written when the WARC file is closed, before it loses its ".open"
	// suffix. Lines wait in memory up to IndexBudget bytes, then in sorted
	// runs on disk.
	Index bool
	// IndexBudget bounds the memory of an open file's index lines
	// (default 8 MiB).
	IndexBudget int
	// QueueLength bounds the exchanges in flight between Write and the
	// file (default 4*Compressors). Write blocks when the queue is full.
	QueueLength int
	// Logger receives rotation and error events (default slog.Default()).
	Logger *slog.Logger
	// Prior is asked about each 200 response with a payload this crawl
	// has not stored: a payload it knows is written as a revisit record
	// referring to that earlier capture (default NoPrior).
	Prior Prior
	// Closed, when not nil, is called with the path of each WARC file
	// once it is closed and renamed, from the goroutine that appends
	// records: while it runs, no record is written (so it should only
	// hand the path on).
	Closed func(path string)
	// Appended, when not nil, is called with each record once it is
	// appended to its file (the warcinfo record of each file first, then
	// the records in file order), from the goroutine that appends
	// records: while it runs, no record is written. The Appended and its
	// slices are valid only during the call.
	Appended func(*Appended)
}

// Exchange is one HTTP request and its response, as sent and received.
type Exchange struct {
	TargetURI string    // normalised URL fetched
	IP        string    // WARC-IP-Address (address actually dialled)
	Date      time.Time // when the request started (WARC-Date); zero means now
	// Request is the HTTP request exactly as sent (request line, headers,
	// body).
	Request []byte
	// Response is the HTTP response exactly as received: status line,
	// headers, body bytes as transferred (chunked framing and
	// content-encoding kept); it may be cut short.
	Response []byte
	// Truncated is "" or a WARC-Truncated reason: "length", "time",
	// "disconnect".
	Truncated string
	// TLS is the connection of an https exchange (nil for http): its
	// response (or revisit) record carries WARC-Protocol (the TLS version,
	// as in "tls/1.3"), WARC-Cipher-Suite and Petrel-TLS-Verify (the
	// certificate's outcome: "verified", "off" or "failed: " and why).
	TLS *TLSInfo
	// HTTP2 says the exchange went over HTTP/2: Request and Response
	// hold it in HTTP/1.1 form, and its request and response (or revisit)
	// records carry "WARC-Protocol: h2" before the TLS version's field
	// (the IIPC's WARC extension for HTTP/2).
	HTTP2 bool
	// NotModified, for a 304 answer to a conditional request, is the
	// earlier capture of the URL it confirms: the response is then stored
	// as a revisit record with the server-not-modified profile referring
	// to it (WARC-Refers-To, -Target-URI, -Date). Nil for any other
	// exchange; ignored unless the status is 304.
	NotModified *Original
	// Languages are the page's languages as its CDXJ line's languages
	// field holds them (ISO 639-3 codes, largest share first,
	// comma-separated: lang.Codes); "" leaves the field out. The WARC
	// records do not hold them.
	Languages string
	// Note is handed, untouched, to Options.Appended with the exchange's
	// request and response (or revisit) records; the store does not read it.
	Note any
}

// Original names a stored response record: what a revisit refers to.
type Original struct {
	URI      string    // its WARC-Target-URI
	Date     time.Time // its WARC-Date
	RecordID string    // its WARC-Record-ID, "<urn:uuid:...>"
}

// TLSInfo describes the TLS connection of an exchange.
type TLSInfo struct {
	Protocol, CipherSuite, Verify string
}

// Result tells where and how an Exchange was stored.
type Result struct {
	Revisit       bool   // written as a revisit record (identical payload seen before, or NotModified)
	NotModified   bool   // that revisit has the server-not-modified profile
	Prior         bool   // that revisit refers to an earlier crawl's capture (Options.Prior)
	Omitted       int64  // bytes of the response an identical-payload revisit left out (its body as received)
	RecordID      string // the WARC-Record-ID of the response (or revisit) record
	PayloadDigest string // "sha1:BASE32"
	BlockDigest   string // of the response (or revisit) record
	File          string // base name of the file the response/revisit record went to (without ".open")
	Offset        int64  // offset of its gzip member in that file
	Length        int64  // compressed length of that gzip member
}

// Stats are cumulative counters of a Writer.
type Stats struct {
	Records           int64 // WARC records written, warcinfo included
	Revisits          int64 // revisit records written
	CompressedBytes   int64 // bytes appended to files
	UncompressedBytes int64 // WARC record bytes before compression
	Files             int64 // files opened
}

// fileHandle is what the writer needs from an open file; a test hook can
// substitute a failing one. Sync may run while Write does (the background
// sync), as it may on an *os.File.
type fileHandle interface {
	io.Writer
	Sync() error
	Close() error
}

// digestRef remembers the first capture of a payload.
type digestRef struct {
	uri, date, id string
}

// refCache is a FIFO-bounded map from payload digest to its first capture.
type refCache struct {
	max  int
	m    map[[sha1.Size]byte]digestRef
	ring [][sha1.Size]byte
	next int
}

func (c *refCache) put(k [sha1.Size]byte, v digestRef) {
	if _, ok := c.m[k]; ok {
		return
	}
	if len(c.ring) < c.max {
		c.ring = append(c.ring, k)
	} else {
		delete(c.m, c.ring[c.next])
		c.ring[c.next] = k
		c.next = (c.next + 1) % c.max
	}
	c.m[k] = v
}

// job carries one exchange through the pipeline: Write builds it, a
// compressor fills members, the appender writes them and signals done.
type job struct {
	recs       [2]recordSpec    // request, then response or revisit
	members    [2]*bytes.Buffer // gzip members
	rawLen     int64
	revisit    bool
	index      []byte        // the response's CDXJ line up to its length (Options.Index)
	langs      string        // its languages field (Exchange.Languages)
	note       any           // Exchange.Note
	compressed chan struct{} // one token when members are ready
	done       chan struct{} // one token when res/err are final
	res        Result
	err        error
}

// openFile is the file currently appended to.
//
// Invariant: at most one background sync of f runs at a time; syncing is
// non-nil while it runs and receives its result once.
type openFile struct {
	name     string // final base name
	path     string // path while open (with ".open")
	f        fileHandle
	bw       *bufio.Writer
	size     int64
	syncedAt int64       // size when the last background sync started
	syncing  chan error  // the running background sync's result, or nil
	index    *lineSorter // the file's CDXJ lines (Options.Index), or nil
}

// Writer writes exchanges to rotating WARC/1.1 files, one gzip member per
// record. Its methods are safe for concurrent use.
type Writer struct {
	opts     Options
	hostname string
	ip       string // an address of this machine for the warcinfo record, or ""
	log      *slog.Logger
	create   func(path string) (fileHandle, error)

	mu     sync.Mutex // guards closed, bloom, refs and the order of enqueueing
	closed bool
	bloom  *bloom.Filter
	refs   refCache

	ordered chan *job // submission order, read by the appender
	work    chan *job // read by compressors

	jobPool sync.Pool
	bufPool sync.Pool
	gzPool  sync.Pool // gzip writers at Options.GzipLevel
	// storePool holds gzip writers at gzip.NoCompression, for the records
	// under Options.StoreBelow.
	storePool sync.Pool
	// flatePool holds flate writers at Options.GzipLevel, for the heads of
	// the records whose bodies are stored (member.go).
	flatePool sync.Pool
	hdrPool   sync.Pool

	workers    sync.WaitGroup
	appendDone chan struct{}

	errMu sync.Mutex
	err   error // sticky write error

	// owned by the appender goroutine
	cur       *openFile
	app       Appended // handed to Options.Appended
	serial    int
	closeOnce sync.Once
	closeErr  error

	records, revisits, compressed, uncompressed, files atomic.Int64
}

// Open creates the directory if needed and starts the compressors and the
// appender. The first file is created on the first Write.
func Open(opts Options) (*Writer, error) {
	return open(opts, func(path string) (fileHandle, error) {
		return os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	})
}

func open(opts Options, create func(string) (fileHandle, error)) (*Writer, error) {
	if opts.Dir == "" {
		return nil, errors.New("store: open: empty Dir")
	}
	if opts.Prefix == "" {
		opts.Prefix = DefaultPrefix
	}
	if opts.MaxFileBytes <= 0 {
		opts.MaxFileBytes = DefaultMaxFileBytes
	}
	if opts.Compressors <= 0 {
		opts.Compressors = runtime.GOMAXPROCS(0)
	}
	if opts.GzipLevel == 0 {
		opts.GzipLevel = DefaultGzipLevel
	}
	if opts.StoreBelow == 0 {
		opts.StoreBelow = DefaultStoreBelow
	}
	if opts.SyncEvery == 0 {
		opts.SyncEvery = DefaultSyncEvery
	}
	if opts.DigestsExpected == 0 {
		opts.DigestsExpected = DefaultDigestsExpected
	}
	if opts.DigestsFalsePositive <= 0 || opts.DigestsFalsePositive >= 1 {
		opts.DigestsFalsePositive = DefaultDigestsFalsePositive
	}
	if opts.RevisitRefs <= 0 {
		opts.RevisitRefs = DefaultRevisitRefs
	}
	if opts.IndexBudget <= 0 {
		opts.IndexBudget = 8 << 20
	}
	if opts.QueueLength <= 0 {
		opts.QueueLength = 4 * opts.Compressors
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Prior == nil {
		opts.Prior = NoPrior{}
	}
	if _, err := gzip.NewWriterLevel(io.Discard, opts.GzipLevel); err != nil {
		return nil, fmt.Errorf("store: open: gzip level %d: %w", opts.GzipLevel, err)
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("store: open: %w", err)
	}
	host, _ := os.Hostname()
	w := &Writer{
		opts:       opts,
		hostname:   host,
		ip:         localIP(),
		log:        opts.Logger,
		create:     create,
		bloom:      bloom.New(uint64(opts.DigestsExpected), opts.DigestsFalsePositive),
		refs:       refCache{max: opts.RevisitRefs, m: make(map[[sha1.Size]byte]digestRef)},
		ordered:    make(chan *job, opts.QueueLength),
		work:       make(chan *job, opts.QueueLength),
		appendDone: make(chan struct{}),
	}
	level := opts.GzipLevel
	w.jobPool.New = func() any {
		return &job{compressed: make(chan struct{}, 1), done: make(chan struct{}, 1)}
	}
	w.bufPool.New = func() any { return new(bytes.Buffer) }
	w.storePool.New = func() any {
		gz, _ := gzip.NewWriterLevel(nil, gzip.NoCompression)
		return gz
	}
	w.gzPool.New = func() any {
		gz, _ := gzip.NewWriterLevel(nil, level) // level checked above
		return gz
	}
	w.flatePool.New = func() any {
		fw, _ := flate.NewWriter(nil, level) // gzip's levels are flate's
		return fw
	}
	w.hdrPool.New = func() any { b := make([]byte, 0, 1024); return &b }
	w.workers.Add(opts.Compressors)
	for range opts.Compressors {
		go w.compressLoop()
	}
	go w.appendLoop()
	return w, nil
}

// checkExchange refuses an exchange that cannot make valid records.
func checkExchange(ex *Exchange) error {
	if ex == nil {
		return errors.New("store: write: nil exchange")
	}
	if ex.TargetURI == "" {
		return errors.New("store: write: empty TargetURI")
	}
	var ref [2]string
	if c := ex.NotModified; c != nil {
		ref = [2]string{c.URI, c.RecordID}
	}
	for _, v := range [...]string{ex.TargetURI, ex.IP, ex.Truncated, ref[0], ref[1]} {
		if strings.ContainsAny(v, "\r\n") {
			return fmt.Errorf("store: write: line break in WARC field value %q", v)
		}
	}
	return nil
}

// payloadOf returns the SHA-1 of resp's payload (its body, de-chunked when
// the chunking is well formed) and its length; h is reset and used.
func payloadOf(h hash.Hash, resp httpResponse) (sum [sha1.Size]byte, n int) {
	h.Reset()
	n = len(resp.body)
	if resp.chunked {
		cw := countWriter{w: h}
		if dechunk(&cw, resp.body) {
			n = int(cw.n)
		} else {
			h.Reset()
			h.Write(resp.body)
		}
	} else {
		h.Write(resp.body)
	}
	h.Sum(sum[:0])
	return sum, n
}

// revisitRecord makes rsp the revisit record of ex (response resp), whose
// payload was first stored by ref (with no WARC-Refers-To when ref.id is
// "": another crawl's capture); head holds its first fields. It returns
// its block digest (of the HTTP header, the record's block).
func revisitRecord(rsp *recordSpec, h hash.Hash, head []field, ex *Exchange, resp httpResponse, ref digestRef, payloadDigest string) string {
	blockDigest := digestOf(h, resp.header)
	rsp.fields = append(head, field{"WARC-Profile", profileIdentical})
	if ref.id != "" {
		rsp.fields = append(rsp.fields, field{"WARC-Refers-To", ref.id})
	}
	rsp.fields = append(rsp.fields,
		field{"WARC-Refers-To-Target-URI", ref.uri},
		field{"WARC-Refers-To-Date", ref.date},
		field{"WARC-Block-Digest", blockDigest},
		field{"WARC-Payload-Digest", payloadDigest})
	rsp.fields = appendTLS(appendH2(rsp.fields, ex.HTTP2, nil), ex.TLS)
	rsp.fields = append(rsp.fields, field{"Content-Type", ctResponse})
	rsp.block1, rsp.block2 = resp.header, nil
	return blockDigest
}

// notModifiedRecord makes rsp the revisit record of a 304 that confirms
// ex.NotModified (WARC 1.1 §6.7.2, profile server-not-modified): its
// block is the HTTP header; it carries no payload digest. It returns its
// block digest.
func notModifiedRecord(rsp *recordSpec, h hash.Hash, head []field, ex *Exchange, resp httpResponse) string {
	blockDigest := digestOf(h, resp.header)
	c := ex.NotModified
	rsp.fields = append(head,
		field{"WARC-Profile", profileNotModified},
		field{"WARC-Refers-To", c.RecordID},
		field{"WARC-Refers-To-Target-URI", c.URI},
		field{"WARC-Refers-To-Date", warcDate(c.Date)},
		field{"WARC-Block-Digest", blockDigest})
	rsp.fields = appendTLS(rsp.fields, ex.TLS)
	rsp.fields = append(rsp.fields, field{"Content-Type", ctResponse})
	rsp.block1, rsp.block2 = resp.header, nil
	return blockDigest
}

// responseRecord makes rsp the response record of ex; head holds its
// first fields. It returns its block digest.
func responseRecord(rsp *recordSpec, h hash.Hash, head []field, ex *Exchange, resp httpResponse, payloadDigest string) string {
	blockDigest := digestOf(h, ex.Response)
	rsp.fields = append(head,
		field{"WARC-Block-Digest", blockDigest},
		field{"WARC-Payload-Digest", payloadDigest})
	if ex.Truncated != "" {
		rsp.fields = append(rsp.fields, field{"WARC-Truncated", ex.Truncated})
	}
	rsp.fields = appendTLS(appendH2(rsp.fields, ex.HTTP2, nil), ex.TLS)
	rsp.fields = append(rsp.fields, field{"Content-Type", ctResponse})
	rsp.block1, rsp.block2 = ex.Response, nil
	if storedBody(resp) {
		rsp.bodyAt = len(resp.header)
	}
	return blockDigest
}

// Write stores ex as a request record and a response record (or a revisit
// record when a 2xx response carries a non-empty payload seen before, or a
// 200 one whose payload Options.Prior knows). It
// blocks until both records are in the file's buffer flushed to the
// operating system, or until an error, and may block earlier when the queue
// is full. Records are appended in the order Write calls are admitted.
// ex's slices are not retained after Write returns.
func (w *Writer) Write(ex *Exchange) (Result, error) {
	if err := checkExchange(ex); err != nil {
		return Result{}, err
	}
	date := ex.Date
	if date.IsZero() {
		date = time.Now()
	}
	dateStr := warcDate(date)
	resp := parseResponse(ex.Response)

	h := sha1.New()
	payloadSum, payloadLen := payloadOf(h, resp)
	payloadDigest := sha1Digest(payloadSum[:])
	reqDigest := digestOf(h, ex.Request)
	// A truncated capture is not the payload: its digest neither makes it a
	// revisit nor enters the filter, so no later capture refers to it.
	eligible := resp.status >= 200 && resp.status < 300 && payloadLen > 0 && ex.Truncated == ""
	var prior Original
	inPrior := false
	if eligible && resp.status == http.StatusOK {
		prior, inPrior = w.opts.Prior.Lookup(payloadSum)
	}

	reqID, respID := newRecordID(), newRecordID()
	common := func(typ, id, other string) []field {
		f := make([]field, 0, 17)
		f = append(f,
			field{"WARC-Type", typ},
			field{"WARC-Record-ID", id},
			field{"WARC-Date", dateStr},
			field{"WARC-Target-URI", ex.TargetURI})
		if ex.IP != "" {
			f = append(f, field{"WARC-IP-Address", ex.IP})
		}
		return append(f, field{"WARC-Concurrent-To", other})
	}

	j := w.jobPool.Get().(*job)
	j.res, j.err, j.revisit = Result{PayloadDigest: payloadDigest, RecordID: respID}, nil, false
	req := &j.recs[0]
	req.fields = append(appendH2(common("request", reqID, respID), ex.HTTP2, ex.TLS),
		field{"WARC-Block-Digest", reqDigest},
		field{"Content-Type", ctRequest})
	req.block1, req.block2 = ex.Request, nil

	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		w.jobPool.Put(j)
		return Result{}, ErrClosed
	}
	if err := w.loadErr(); err != nil {
		w.mu.Unlock()
		w.jobPool.Put(j)
		return Result{}, err
	}
	var ref digestRef
	if eligible {
		ref, j.revisit, j.res.Prior = w.firstCapture(payloadSum, ex.TargetURI, dateStr, respID, prior, inPrior)
	}
	notMod := resp.status == http.StatusNotModified && ex.NotModified != nil
	switch {
	case notMod:
		j.res.BlockDigest = notModifiedRecord(&j.recs[1], h, common("revisit", respID, reqID), ex, resp)
		j.revisit = true
		j.res.Revisit, j.res.NotModified, j.res.PayloadDigest = true, true, ""
	case j.revisit:
		j.res.BlockDigest = revisitRecord(&j.recs[1], h, common("revisit", respID, reqID), ex, resp, ref, payloadDigest)
		j.res.Revisit, j.res.Omitted = true, int64(len(resp.body))
	default:
		j.res.BlockDigest = responseRecord(&j.recs[1], h, common("response", respID, reqID), ex, resp, payloadDigest)
	}
	if w.opts.Index {
		e := indexEntry{uri: ex.TargetURI, date: date, mime: resp.mime, status: resp.status,
			digest: strings.TrimPrefix(payloadDigest, "sha1:")}
		if j.revisit || notMod {
			e.mime = "warc/revisit"
		}
		if notMod { // as the record: no payload, nor its digest
			e.status, e.digest = notModifiedIndexStatus, ""
		}
		j.index = e.cdxjPrefix(j.index[:0])
		j.langs = ex.Languages
	}
	j.note = ex.Note
	w.ordered <- j
	w.work <- j
	w.mu.Unlock()

	<-j.done
	res, err := j.res, j.err
	j.recs[0] = recordSpec{}
	j.recs[1] = recordSpec{}
	j.note = nil
	w.jobPool.Put(j)
	return res, err
}

// firstCapture finds the capture a payload (SHA-1 sum, fetched from uri at
// date as record id) refers to: the first of this crawl, else the earlier
// crawl's (prior, when inPrior). revisit is false for a payload stored in
// full, which becomes the capture later ones of this crawl refer to. The
// caller holds w.mu.
func (w *Writer) firstCapture(sum [sha1.Size]byte, uri, date, id string, prior Original, inPrior bool) (ref digestRef, revisit, isPrior bool) {
	if w.bloom.TestAndAdd(sum[:]) {
		if ref, revisit = w.refs.m[sum]; revisit {
			return ref, true, false
		}
	}
	if inPrior {
		return digestRef{uri: prior.URI, date: warcDate(prior.Date)}, true, true
	}
	// New, or seen so long ago that its first capture is forgotten: stored
	// in full, and the capture others refer to.
	w.refs.put(sum, digestRef{uri: uri, date: date, id: id})
	return digestRef{}, false, false
}

// countWriter counts the bytes written through it.
type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// compressLoop turns the records of each job into gzip members.
func (w *Writer) compressLoop() {
	defer w.workers.Done()
	for j := range w.work {
		j.rawLen = 0
		for i := range j.recs {
			var n int64
			j.members[i], n = w.compress(&j.recs[i])
			j.rawLen += n
		}
		j.compressed <- struct{}{}
	}
}

// compress serialises r into one gzip member and returns it with the
// uncompressed record length.
func (w *Writer) compress(r *recordSpec) (*bytes.Buffer, int64) {
	buf := w.bufPool.Get().(*bytes.Buffer)
	buf.Reset()
	hp := w.hdrPool.Get().(*[]byte)
	hdr := r.appendHeader((*hp)[:0])
	n := int64(len(hdr) + r.blockLen() + len(recordEnd))
	switch {
	case n < int64(w.opts.StoreBelow):
		w.gzipMember(buf, &w.storePool, hdr, r)
	case r.bodyAt > 0 && w.opts.GzipLevel != gzip.StatelessCompression: // the one gzip level flate lacks
		w.storedBodyMember(buf, hdr, r)
	default:
		w.gzipMember(buf, &w.gzPool, hdr, r)
	}
	if cap(hdr) <= 64<<10 {
		*hp = hdr
		w.hdrPool.Put(hp)
	}
	return buf, n
}

// gzipMember appends to buf the gzip member of the record whose WARC
// header is hdr, written by a gzip.Writer of pool.
func (w *Writer) gzipMember(buf *bytes.Buffer, pool *sync.Pool, hdr []byte, r *recordSpec) {
	gz := pool.Get().(*gzip.Writer)
	gz.Reset(buf)
	// Writes to a bytes.Buffer cannot fail.
	_, _ = gz.Write(hdr)
	_, _ = gz.Write(r.block1)
	_, _ = gz.Write(r.block2)
	_, _ = gz.Write(recordEnd)
	_ = gz.Close()
	gz.Reset(nil)
	pool.Put(gz)
}

// putBuf returns a member buffer to the pool unless it grew too large to
// keep around.
func (w *Writer) putBuf(b *bytes.Buffer) {
	if b != nil && b.Cap() <= 4<<20 {
		w.bufPool.Put(b)
	}
}

func (w *Writer) loadErr() error {
	w.errMu.Lock()
	defer w.errMu.Unlock()
	return w.err
}

func (w *Writer) setErr(err error) {
	w.errMu.Lock()
	defer w.errMu.Unlock()
	if w.err == nil {
		w.err = err
		w.log.Error("store: WARC writing stopped", "err", err)
	}
}

// Flush policy of the appender: callers of Write wait for the flush of
// their batch, so a batch is flushed when no more work is queued, or when
// it grows past these bounds.
const (
	maxBatchJobs  = 64
	maxBatchBytes = 1 << 20
	bufioSize     = 256 << 10
)

// appendLoop appends jobs in submission order, rotating files as needed.
func (w *Writer) appendLoop() {
	defer close(w.appendDone)
	pending := make([]*job, 0, maxBatchJobs)
	var batchBytes int64
	complete := func(err error) {
		for _, j := range pending {
			if err != nil && j.err == nil {
				j.err = err
			}
			j.done <- struct{}{}
		}
		pending = pending[:0]
		batchBytes = 0
	}
	for j := range w.ordered {
		<-j.compressed
		pending = append(pending, j)
		if err := w.loadErr(); err != nil {
			w.releaseMembers(j)
			complete(err)
			continue
		}
		n, err := w.appendJob(j)
		w.releaseMembers(j)
		batchBytes += n
		if err != nil {
			w.setErr(err)
			complete(err)
			continue
		}
		switch {
		case w.cur.size >= w.opts.MaxFileBytes:
			err = w.finishFile()
		case len(w.ordered) == 0 || len(pending) >= maxBatchJobs || batchBytes >= maxBatchBytes:
			if err = w.cur.bw.Flush(); err != nil {
				err = fmt.Errorf("store: write %s: %w", w.cur.name, err)
			} else if serr := w.cur.backgroundSync(w.opts.SyncEvery); serr != nil {
				// The sync covered records of earlier batches, already
				// reported stored; this batch's reached the file. The
				// error is sticky: later Writes and Close return it, and
				// the file keeps its ".open" suffix.
				w.setErr(serr)
			}
		default:
			continue
		}
		if err != nil {
			w.setErr(err)
		}
		complete(err)
	}
	var err error
	if w.cur != nil {
		if err = w.finishFile(); err != nil {
			w.setErr(err)
		}
	}
	complete(err)
}

func (w *Writer) releaseMembers(j *job) {
	for i, m := range j.members {
		w.putBuf(m)
		j.members[i] = nil
	}
}

// appendJob writes the members of j to the current file, opening one if
// needed, and fills j.res.
func (w *Writer) appendJob(j *job) (int64, error) {
	if w.cur == nil {
		if err := w.newFile(); err != nil {
			return 0, err
		}
	}
	c := w.cur
	var total int64
	for i, m := range j.members {
		off := c.size
		n, err := c.bw.Write(m.Bytes())
		c.size += int64(n)
		total += int64(n)
		if err != nil {
			return total, fmt.Errorf("store: write %s: %w", c.name, err)
		}
		if i == 1 {
			j.res.File, j.res.Offset, j.res.Length = c.name, off, int64(n)
		}
		w.appended(&j.recs[i], off, int64(n), j.note)
	}
	if c.index != nil {
		if err := c.index.add(cdxjSuffix(bytes.Clone(j.index), j.res.Length, j.res.Offset, c.name, j.langs)); err != nil {
			return total, err
		}
	}
	w.records.Add(int64(len(j.members)))
	if j.revisit {
		w.revisits.Add(1)
	}
	w.compressed.Add(total)
	w.uncompressed.Add(j.rawLen)
	return total, nil
}

// newFile creates the next file and writes its warcinfo record.
func (w *Writer) newFile() error {
	stamp := time.Now().UTC().Format("20060102150405")
	var (
		name, path string
		f          fileHandle
		err        error
	)
	for range 1000 {
		name = fmt.Sprintf("%s-%s-%05d.warc.gz", w.opts.Prefix, stamp, w.serial)
		w.serial++
		path = filepath.Join(w.opts.Dir, name+".open")
		if _, serr := os.Lstat(filepath.Join(w.opts.Dir, name)); serr == nil {
			continue
		}
		f, err = w.create(path)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		break
	}
	if err != nil {
		return fmt.Errorf("store: create %s: %w", name, err)
	}
	if f == nil {
		return fmt.Errorf("store: create %s: no free file name", name)
	}
	c := &openFile{name: name, path: path, f: f, bw: bufio.NewWriterSize(f, bufioSize)}
	if w.opts.Index {
		c.index = newLineSorter(w.opts.Dir, w.opts.IndexBudget)
	}
	w.cur = c
	w.files.Add(1)

	block := warcinfoBlock(&w.opts, w.hostname, w.ip)
	info := recordSpec{
		fields: []field{
			{"WARC-Type", "warcinfo"},
			{"WARC-Record-ID", newRecordID()},
			{"WARC-Date", warcDate(time.Now())},
			{"WARC-Filename", name},
			{"WARC-Block-Digest", digestOf(sha1.New(), block)},
			{"Content-Type", ctWarcFields},
		},
		block1: block,
	}
	m, raw := w.compress(&info)
	defer w.putBuf(m)
	n, err := c.bw.Write(m.Bytes())
	c.size += int64(n)
	w.compressed.Add(int64(n))
	if err != nil {
		return fmt.Errorf("store: write %s: %w", name, err)
	}
	w.appended(&info, 0, int64(n), nil)
	w.records.Add(1)
	w.uncompressed.Add(raw)
	w.log.Debug("store: opened WARC file", "file", name)
	return nil
}

// backgroundSync collects the result of a finished background sync and
// starts the next one when the file has grown by every bytes since the last
// started (every < 0: never). It is called after a flush, by the appender
// only; it returns the error of a finished sync.
func (c *openFile) backgroundSync(every int64) error {
	if c.syncing != nil {
		select {
		case err := <-c.syncing:
			c.syncing = nil
			if err != nil {
				return fmt.Errorf("store: sync %s: %w", c.name, err)
			}
		default:
			return nil // still running: the next flush looks again
		}
	}
	if every < 0 || c.size-c.syncedAt < every {
		return nil
	}
	c.syncedAt = c.size
	done := make(chan error, 1)
	c.syncing = done
	f := c.f
	go func() { done <- f.Sync() }()
	return nil
}

// waitSync waits for a running background sync and returns its error.
func (c *openFile) waitSync() error {
	if c.syncing == nil {
		return nil
	}
	err := <-c.syncing
	c.syncing = nil
	return err
}

// finishFile flushes, syncs, closes and renames the current file. After a
// write or sync error the file keeps its ".open" suffix: it is incomplete,
// or not known to be on disk.
func (w *Writer) finishFile() error {
	c := w.cur
	w.cur = nil
	err := c.bw.Flush()
	if err != nil {
		err = fmt.Errorf("store: write %s: %w", c.name, err)
	}
	if serr := c.waitSync(); err == nil && serr != nil {
		err = fmt.Errorf("store: sync %s: %w", c.name, serr)
	}
	if err == nil {
		if serr := c.f.Sync(); serr != nil {
			err = fmt.Errorf("store: sync %s: %w", c.name, serr)
		}
	}
	if cerr := c.f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("store: write %s: %w", c.name, cerr)
	}
	if err != nil {
		c.closeIndex()
		return err
	}
	if w.loadErr() != nil {
		c.closeIndex()
		return nil
	}
	if c.index != nil {
		idx := fileIndexName(filepath.Join(w.opts.Dir, c.name))
		err := atomicfile.Write(idx, atomicfile.Options{Sync: true, Buffer: 256 << 10}, func(f io.Writer) error { _, err := c.index.writeTo(f); return err })
		c.index = nil
		if err != nil {
			return fmt.Errorf("store: index %s: %w", c.name, err)
		}
	}
	final := filepath.Join(w.opts.Dir, c.name)
	if err := os.Rename(c.path, final); err != nil {
		return fmt.Errorf("store: close %s: %w", c.name, err)
	}
	if err := atomicfile.SyncDir(w.opts.Dir); err != nil {
		return fmt.Errorf("store: close %s: %w", c.name, err)
	}
	w.log.Debug("store: closed WARC file", "file", c.name, "bytes", c.size)
	if w.opts.Closed != nil {
		w.opts.Closed(final)
	}
	return nil
}

// closeIndex drops the index lines of a file that failed.
func (c *openFile) closeIndex() {
	if c.index != nil {
		c.index.close()
		c.index = nil
	}
}

// Close waits for queued records, then flushes, syncs, closes and renames
// the open file. It returns the first write error the Writer met, if any.
// Close is idempotent; Write after Close returns ErrClosed.
func (w *Writer) Close() error {
	w.closeOnce.Do(func() {
		w.mu.Lock()
		w.closed = true
		close(w.ordered)
		close(w.work)
		w.mu.Unlock()
		w.workers.Wait()
		<-w.appendDone
		w.closeErr = w.loadErr()
	})
	return w.closeErr
}

// Err returns the Writer's first write or sync error (sticky: every later
// Write fails with it), or nil.
func (w *Writer) Err() error { return w.loadErr() }

// Stats returns a snapshot of the Writer's counters.
func (w *Writer) Stats() Stats {
	return Stats{
		Records:           w.records.Load(),
		Revisits:          w.revisits.Load(),
		CompressedBytes:   w.compressed.Load(),
		UncompressedBytes: w.uncompressed.Load(),
		Files:             w.files.Load(),
	}
}

// DigestStats returns the figures of the filter of payload digests. Like
// SaveDigests it must not run while Write calls do.
func (w *Writer) DigestStats() bloom.Stats {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.bloom.Stats()
}

// SaveDigests writes the Bloom filter of payload digests and the first
// captures remembered for revisits, so that a crawl resumed later keeps
// writing revisit records for payloads stored before. It must not run
// while Write calls do (the filter is read without the writer's lock, so
// that it can run beside Close); it may run before, during or after Close.
//
// Format: the filter (internal/bloom), then
//
//	"PREFS001"   magic, 8 bytes
//	count        uint32, little endian
//	count refs, oldest first: the 20-byte SHA-1 of the payload, then its
//	first capture's target URI, WARC-Date and record ID, each a uint16
//	(little endian) length and the bytes.
//
// A file that ends after the filter has no remembered captures.
func (w *Writer) SaveDigests(out io.Writer) error {
	w.mu.Lock()
	f, refs := w.bloom, &w.refs
	w.mu.Unlock()
	bw := bufio.NewWriterSize(out, 1<<20)
	if _, err := f.WriteTo(bw); err != nil {
		return fmt.Errorf("store: save digests: %w", err)
	}
	bw.WriteString(refsMagic)
	order := refs.ring
	if len(refs.ring) == refs.max {
		order = append(append([][sha1.Size]byte(nil), refs.ring[refs.next:]...), refs.ring[:refs.next]...)
	}
	bw.Write(binary.LittleEndian.AppendUint32(nil, uint32(len(order))))
	for _, k := range order {
		r := refs.m[k]
		bw.Write(k[:])
		for _, v := range [...]string{r.uri, r.date, r.id} {
			v = v[:min(len(v), 0xffff)]
			bw.Write(binary.LittleEndian.AppendUint16(nil, uint16(len(v))))
			bw.WriteString(v)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("store: save digests: %w", err)
	}
	return nil
}

// refsMagic starts the remembered first captures in a saved digest filter.
const refsMagic = "PREFS001"

// LoadDigests replaces the Bloom filter of payload digests and the
// remembered first captures with those written by SaveDigests. Call it
// before the first Write.
func (w *Writer) LoadDigests(in io.Reader) error {
	br := bufio.NewReaderSize(in, 1<<20)
	f, err := bloom.ReadFrom(br)
	if err != nil {
		return fmt.Errorf("store: load digests: %w", err)
	}
	refs := refCache{max: w.opts.RevisitRefs, m: make(map[[sha1.Size]byte]digestRef)}
	var head [12]byte
	switch _, err := io.ReadFull(br, head[:]); {
	case err == io.EOF:
	case err != nil || string(head[:8]) != refsMagic:
		return fmt.Errorf("store: load digests: no remembered captures after the filter")
	default:
		for range binary.LittleEndian.Uint32(head[8:]) {
			var k [sha1.Size]byte
			var vals [3]string
			if _, err := io.ReadFull(br, k[:]); err != nil {
				return fmt.Errorf("store: load digests: %w", err)
			}
			for i := range vals {
				var n [2]byte
				if _, err := io.ReadFull(br, n[:]); err != nil {
					return fmt.Errorf("store: load digests: %w", err)
				}
				b := make([]byte, binary.LittleEndian.Uint16(n[:]))
				if _, err := io.ReadFull(br, b); err != nil {
					return fmt.Errorf("store: load digests: %w", err)
				}
				vals[i] = string(b)
			}
			refs.put(k, digestRef{uri: vals[0], date: vals[1], id: vals[2]})
		}
	}
	w.mu.Lock()
	w.bloom, w.refs = f, refs
	w.mu.Unlock()
	return nil
}

// appendH2 appends, for an exchange over HTTP/2 (h2), the field
// "WARC-Protocol: h2" and then, if t is not nil, the TLS version's (a
// response record has it from appendTLS).
func appendH2(f []field, h2 bool, t *TLSInfo) []field {
	if !h2 {
		return f
	}
	f = append(f, field{"WARC-Protocol", "h2"})
	if t != nil {
		f = append(f, field{"WARC-Protocol", t.Protocol})
	}
	return f
}

// appendTLS appends the record fields describing an https exchange's
// connection, if any.
func appendTLS(f []field, t *TLSInfo) []field {
	if t == nil {
		return f
	}
	return append(f, field{"WARC-Protocol", t.Protocol}, field{"WARC-Cipher-Suite", t.CipherSuite},
		field{"Petrel-TLS-Verify", t.Verify})
}
