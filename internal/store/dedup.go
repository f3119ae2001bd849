package store

import (
	"bufio"
	"bytes"
	"cmp"
	"crypto/sha1"
	"encoding/base32"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unsafe"
)

// Prior answers whether a payload is archived by an earlier crawl, and
// where: the Writer asks it about every 200 response with a payload that
// this crawl has not stored yet. NoPrior knows nothing; a DedupIndex knows
// what an earlier crawl's CDXJ index lists.
type Prior interface {
	// Lookup returns the earlier capture of the payload whose SHA-1 is
	// sum: its URI and date (its RecordID is "": another crawl's record
	// is not named).
	Lookup(sum [sha1.Size]byte) (Original, bool)
}

// NoPrior is the Prior of a crawl without --dedup-index.
type NoPrior struct{}

// Lookup finds nothing.
func (NoPrior) Lookup([sha1.Size]byte) (Original, bool) { return Original{}, false }

// DefaultDedupMax bounds the captures a DedupIndex holds.
const DefaultDedupMax = 10_000_000

// dedupEntry is one capture of a DedupIndex: 40 bytes, the URI's bytes
// in the index's arena besides.
type dedupEntry struct {
	sum  [sha1.Size]byte
	ulen uint32
	uoff uint64 // of the URI in the arena
	date int64  // Unix seconds (CDXJ timestamps are seconds)
}

// DedupStats say what loading a DedupIndex read.
type DedupStats struct {
	Files     int   // CDXJ files read
	Lines     int64 // lines read (blank and "!" lines not counted)
	Captures  int   // distinct payload digests held
	Malformed int64 // lines that are not SURT TIMESTAMP {JSON} with a url and a sha1 digest
	Skipped   int64 // well-formed lines not used: status other than 200, revisit records
	LeftOut   int64 // usable lines past the bound (Max), not held
}

// DedupIndex maps the payload digests of an earlier crawl's 200
// responses to their first capture (URI and date), read from CDXJ
// indexes. It holds at most Max distinct digests, in 40 bytes each plus
// the URI's length; it is read-only once loaded, so safe for concurrent
// Lookups.
type DedupIndex struct {
	entries []dedupEntry // sorted by sum, one per sum (the earliest capture)
	arena   []byte
	Stats   DedupStats
}

// dedupLoad is a DedupIndex being read.
type dedupLoad struct {
	DedupIndex
	max    int
	full   bool
	log    *slog.Logger
	logged int
}

// maxLoggedMalformed bounds the malformed lines logged one by one; the
// rest are counted.
const maxLoggedMalformed = 10

// LoadDedupIndex reads the CDXJ index at path: a file, a crawl directory
// (its indexes/index.cdxj) or a directory of *.cdxj files. It holds at
// most max digests (0: DefaultDedupMax). Malformed lines are counted and
// the first few logged with file:line; a path that cannot be read is an
// error.
func LoadDedupIndex(path string, max int, log *slog.Logger) (*DedupIndex, error) {
	files, err := dedupFiles(path)
	if err != nil {
		return nil, err
	}
	if max <= 0 {
		max = DefaultDedupMax
	}
	if log == nil {
		log = slog.Default()
	}
	l := &dedupLoad{max: max, log: log}
	for _, f := range files {
		if err := l.readFile(f); err != nil {
			return nil, err
		}
	}
	l.compact()
	if cap(l.entries) > len(l.entries)+len(l.entries)/16 {
		l.entries = slices.Clone(l.entries) // drop the slack of appending
	}
	l.Stats.Files, l.Stats.Captures = len(files), len(l.entries)
	if l.Stats.Malformed > maxLoggedMalformed {
		log.Warn("dedup index: malformed lines", "lines", l.Stats.Malformed, "logged", maxLoggedMalformed)
	}
	if l.Stats.LeftOut > 0 {
		log.Warn("dedup index: captures left out past --dedup-index-max", "max", max, "left_out", l.Stats.LeftOut)
	}
	return &l.DedupIndex, nil
}

// dedupFiles lists the CDXJ files path stands for.
func dedupFiles(path string) ([]string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return []string{path}, nil
	}
	if merged := MergedIndex(path); fileExists(merged) {
		return []string{merged}, nil
	}
	files, err := filepath.Glob(filepath.Join(path, "*.cdxj"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s: no *.cdxj file in it, nor indexes/index.cdxj", path)
	}
	return files, nil
}

func fileExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}

// readFile reads the lines of one CDXJ file.
func (l *dedupLoad) readFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 1<<20)
	for n := 1; ; n++ {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = br.ReadSlice('\n')
			}
			l.malformed(path, n, "line longer than 1 MiB")
		} else if len(line) > 0 {
			l.addLine(path, n, bytes.TrimRight(line, "\r\n"))
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
}

// malformed counts a malformed line and logs the first few.
func (l *dedupLoad) malformed(path string, n int, why string) {
	l.Stats.Malformed++
	if l.logged < maxLoggedMalformed {
		l.logged++
		l.log.Warn("dedup index: malformed line", "at", fmt.Sprintf("%s:%d", path, n), "why", why)
	}
}

// addLine reads one line: SURT TIMESTAMP {JSON}.
func (l *dedupLoad) addLine(path string, n int, line []byte) {
	if len(bytes.TrimSpace(line)) == 0 || line[0] == '!' {
		return
	}
	l.Stats.Lines++
	c, why := parseDedupLine(line)
	switch {
	case why != "":
		l.malformed(path, n, why)
	case !c.usable:
		l.Stats.Skipped++
	default:
		l.add(c)
	}
}

// dedupCapture is what one CDXJ line gives a DedupIndex.
type dedupCapture struct {
	sum    [sha1.Size]byte
	uri    string
	date   time.Time
	usable bool // a 200 response, not a revisit
}

// parseDedupLine reads a CDXJ line; why says what is wrong with a
// malformed one.
func parseDedupLine(line []byte) (c dedupCapture, why string) {
	_, rest, ok := bytes.Cut(line, []byte{' '})
	if !ok {
		return c, "no timestamp"
	}
	stamp, js, ok := bytes.Cut(rest, []byte{' '})
	if !ok || len(js) == 0 || js[0] != '{' {
		return c, "no JSON after the timestamp"
	}
	if len(stamp) < 14 || strings.Trim(string(stamp), "0123456789") != "" {
		return c, "timestamp is not 14 digits"
	}
	date, err := time.Parse("20060102150405", string(stamp[:14]))
	if err != nil {
		return c, "timestamp: " + err.Error()
	}
	f, err := parseCDXJFields(js)
	if err != nil {
		return c, "JSON: " + err.Error()
	}
	if f.URL == "" || strings.ContainsAny(f.URL, "\x00\r\n") {
		return c, "no url, or a url with a line break"
	}
	sum, ok := normalDigest(f.Digest)
	if !ok {
		return c, fmt.Sprintf("digest %q is not a SHA-1 (sha1:BASE32, BASE32 or hex)", f.Digest)
	}
	c = dedupCapture{sum: sum, uri: f.URL, date: date}
	c.usable = f.Status == "200" && f.Mime != "warc/revisit"
	return c, ""
}

// normalDigest reads a SHA-1 payload digest as CDXJ indexes write it:
// "sha1:" and base 32, bare base 32, or hex.
func normalDigest(s string) (sum [sha1.Size]byte, ok bool) {
	if len(s) > 5 && strings.EqualFold(s[:5], "sha1:") {
		s = s[5:]
	}
	var b []byte
	var err error
	switch len(s) {
	case 32:
		b, err = base32.StdEncoding.DecodeString(strings.ToUpper(s))
	case 40:
		b, err = hex.DecodeString(s)
	default:
		return sum, false
	}
	if err != nil || len(b) != sha1.Size {
		return sum, false
	}
	copy(sum[:], b)
	return sum, true
}

// add holds c, or counts it left out once the index is full.
func (l *dedupLoad) add(c dedupCapture) {
	if len(l.entries) >= l.max && !l.full {
		l.compact()
		// Little gained: the index is full of distinct digests.
		l.full = len(l.entries) >= l.max-l.max/8
	}
	if l.full || len(l.entries) >= l.max {
		l.Stats.LeftOut++
		return
	}
	l.entries = append(l.entries, dedupEntry{sum: c.sum, ulen: uint32(len(c.uri)), uoff: uint64(len(l.arena)), date: c.date.Unix()})
	l.arena = append(l.arena, c.uri...)
}

// compact sorts the entries by digest, keeps the earliest capture of
// each and copies their URIs to a new arena, which the dropped entries'
// URIs are not in.
func (l *dedupLoad) compact() {
	slices.SortFunc(l.entries, func(a, b dedupEntry) int {
		if c := bytes.Compare(a.sum[:], b.sum[:]); c != 0 {
			return c
		}
		return cmp.Compare(a.date, b.date)
	})
	l.entries = slices.CompactFunc(l.entries, func(a, b dedupEntry) bool { return a.sum == b.sum })
	size := 0
	for _, e := range l.entries {
		size += int(e.ulen)
	}
	arena := make([]byte, 0, size)
	for i := range l.entries {
		e := &l.entries[i]
		uri := l.arena[e.uoff : e.uoff+uint64(e.ulen)]
		e.uoff = uint64(len(arena))
		arena = append(arena, uri...)
	}
	l.arena = arena
}

// Bytes is the memory the index holds: its entries and their URIs.
func (x *DedupIndex) Bytes() int64 {
	return int64(cap(x.entries))*int64(unsafe.Sizeof(dedupEntry{})) + int64(cap(x.arena))
}

// Lookup returns the earliest capture of the payload whose SHA-1 is sum.
func (x *DedupIndex) Lookup(sum [sha1.Size]byte) (Original, bool) {
	i, ok := slices.BinarySearchFunc(x.entries, sum, func(e dedupEntry, s [sha1.Size]byte) int {
		return bytes.Compare(e.sum[:], s[:])
	})
	if !ok {
		return Original{}, false
	}
	e := &x.entries[i]
	return Original{URI: string(x.arena[e.uoff : e.uoff+uint64(e.ulen)]), Date: time.Unix(e.date, 0).UTC()}, true
}
