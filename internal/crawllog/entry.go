package crawllog

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Heritrix's negative status codes used by Petrel (see the package doc).
const (
	StatusDNSFailed          = -1
	StatusConnectFailed      = -2
	StatusConnectBroken      = -3
	StatusTimeout            = -4
	StatusOtherFailure       = -5
	StatusDNSPrerequisite    = -6
	StatusRetriesExhausted   = -8
	StatusRobotsPrerequisite = -61
	StatusPrerequisite       = -62
	StatusChaff              = -4000
	StatusTooManyHops        = -4001
	StatusTooManyEmbedHops   = -4002
	StatusOutOfScope         = -5000
	StatusBlockedByUser      = -5001
	StatusBlockedByFilter    = -5002
	StatusOverQuota          = -5003
	StatusRobots             = -9998
)

// Entry is one line of crawl.log. Zero values print as "-" (Fetcher 0 as
// "#000", Status 0 as 0).
type Entry struct {
	Time        time.Time // when the line is logged; zero: now
	Status      int
	Size        int64 // body bytes; negative: none
	URL         string
	HopPath     string
	Via         string
	MIME        string // as received (parameters are cut when printed); "" for no-type
	NoResponse  bool   // no response: MIME prints "unknown"
	Fetcher     int    // from 1; 0: no fetcher
	Start       time.Time
	Duration    time.Duration
	Digest      string // "sha1:..."
	Seed        string
	Annotations []string
}

const timeLayout = "2006-01-02T15:04:05.000Z"

// AppendTo appends the line, newline included, to b.
func (e *Entry) AppendTo(b []byte) []byte {
	t := e.Time
	if t.IsZero() {
		t = time.Now()
	}
	b = t.UTC().AppendFormat(b, timeLayout)
	b = append(b, ' ')
	b = padInt(b, int64(e.Status), 5)
	b = append(b, ' ')
	if e.Size < 0 {
		b = append(b, "         -"...)
	} else {
		b = padInt(b, e.Size, 10)
	}
	b = append(b, ' ')
	b = appendField(b, e.URL)
	b = append(b, ' ')
	b = appendField(b, e.HopPath)
	b = append(b, ' ')
	b = appendField(b, e.Via)
	b = append(b, ' ')
	b = appendMIME(b, e.MIME, e.NoResponse)
	b = append(b, " #"...)
	if e.Fetcher < 10 {
		b = append(b, '0', '0')
	} else if e.Fetcher < 100 {
		b = append(b, '0')
	}
	b = strconv.AppendInt(b, int64(e.Fetcher), 10)
	b = append(b, ' ')
	if e.Start.IsZero() {
		b = append(b, '-')
	} else {
		b = e.Start.UTC().AppendFormat(b, "20060102150405")
		ms := e.Start.Nanosecond() / 1e6
		b = append(b, byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10), '+')
		b = strconv.AppendInt(b, e.Duration.Milliseconds(), 10)
	}
	b = append(b, ' ')
	b = appendField(b, e.Digest)
	b = append(b, ' ')
	b = appendField(b, e.Seed)
	b = append(b, ' ')
	if len(e.Annotations) == 0 {
		b = append(b, '-')
	}
	for i, a := range e.Annotations {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendField(b, a)
	}
	return append(b, '\n')
}

// padInt appends v right-aligned in width characters.
func padInt(b []byte, v int64, width int) []byte {
	var tmp [24]byte
	d := strconv.AppendInt(tmp[:0], v, 10)
	for i := len(d); i < width; i++ {
		b = append(b, ' ')
	}
	return append(b, d...)
}

// appendField appends s, or "-" when empty; bytes that would break the
// line into other fields (spaces, controls) are percent-encoded.
func appendField(b []byte, s string) []byte {
	if s == "" {
		return append(b, '-')
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c == 0x7f {
			b = append(b, '%', "0123456789ABCDEF"[c>>4], "0123456789ABCDEF"[c&15])
			continue
		}
		b = append(b, c)
	}
	return b
}

// appendMIME appends the media type of a Content-Type value: lower case,
// parameters and spaces cut.
func appendMIME(b []byte, ct string, noResponse bool) []byte {
	if noResponse {
		return append(b, "unknown"...)
	}
	if i := strings.IndexByte(ct, ';'); i >= 0 {
		ct = ct[:i]
	}
	ct = strings.TrimSpace(ct)
	if ct == "" {
		return append(b, "no-type"...)
	}
	for i := 0; i < len(ct); i++ {
		c := ct[i]
		switch {
		case 'A' <= c && c <= 'Z':
			c += 'a' - 'A'
		case c <= ' ' || c == 0x7f:
			continue
		}
		b = append(b, c)
	}
	return b
}

// Line is a parsed crawl.log line: the fields as written, "-" made empty.
type Line struct {
	Time        time.Time
	Status      int
	Size        int64 // -1 for "-"
	URL         string
	HopPath     string
	Via         string
	MIME        string
	Fetcher     int
	Start       time.Time // zero for "-"
	Duration    time.Duration
	Digest      string
	Seed        string
	Annotations []string
}

// Annotation returns the value of the first annotation "name:value" (or
// reports whether the bare annotation name is present, with "").
func (l *Line) Annotation(name string) (string, bool) {
	for _, a := range l.Annotations {
		if a == name {
			return "", true
		}
		if v, ok := strings.CutPrefix(a, name+":"); ok {
			return v, true
		}
	}
	return "", false
}

// ErrFormat is wrapped by every error of Parse.
var ErrFormat = errors.New("crawllog: not a crawl.log line")

// Parse reads one crawl.log line (without or with its newline), checking
// every field's form.
func Parse(s string) (Line, error) {
	s = strings.TrimSuffix(s, "\n")
	f := strings.Fields(s)
	if len(f) != 12 {
		return Line{}, fmt.Errorf("%w: %d fields, want 12: %q", ErrFormat, len(f), s)
	}
	var l Line
	bad := func(field string) (Line, error) {
		return Line{}, fmt.Errorf("%w: bad %s in %q", ErrFormat, field, s)
	}
	var err error
	if l.Time, err = time.Parse(timeLayout, f[0]); err != nil {
		return bad("time")
	}
	if l.Status, err = strconv.Atoi(f[1]); err != nil {
		return bad("status")
	}
	l.Size = -1
	if f[2] != "-" {
		if l.Size, err = strconv.ParseInt(f[2], 10, 64); err != nil || l.Size < 0 {
			return bad("size")
		}
	}
	dash := func(v string) string {
		if v == "-" {
			return ""
		}
		return v
	}
	l.URL, l.HopPath, l.Via, l.MIME = dash(f[3]), dash(f[4]), dash(f[5]), f[6]
	if l.URL == "" {
		return bad("URL")
	}
	if strings.Trim(l.HopPath, "LREXPMIS") != "" { // Heritrix's hop letters
		return bad("hop path")
	}
	if l.MIME == "-" || (!strings.Contains(l.MIME, "/") && l.MIME != "no-type" && l.MIME != "unknown") {
		return bad("MIME type")
	}
	if len(f[7]) < 4 || f[7][0] != '#' {
		return bad("fetcher")
	}
	if l.Fetcher, err = strconv.Atoi(f[7][1:]); err != nil || l.Fetcher < 0 {
		return bad("fetcher")
	}
	if f[8] != "-" {
		start, dur, ok := strings.Cut(f[8], "+")
		if !ok || len(start) != 17 {
			return bad("start+duration")
		}
		if l.Start, err = time.Parse("20060102150405.000", start[:14]+"."+start[14:]); err != nil {
			return bad("start")
		}
		ms, err := strconv.ParseInt(dur, 10, 64)
		if err != nil || ms < 0 {
			return bad("duration")
		}
		l.Duration = time.Duration(ms) * time.Millisecond
	}
	l.Digest, l.Seed = dash(f[9]), dash(f[10])
	if l.Digest != "" && !strings.HasPrefix(l.Digest, "sha1:") {
		return bad("digest")
	}
	if f[11] != "-" {
		l.Annotations = strings.Split(f[11], ",")
	}
	return l, nil
}
