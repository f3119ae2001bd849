package store

import (
	"bytes"
	"crypto/rand"
	"crypto/sha1"
	"encoding/base32"
	"encoding/hex"
	"hash"
	"net"
	"strconv"
	"time"
)

// WARC header constants.
const (
	warcVersion        = "WARC/1.1\r\n"
	ctRequest          = "application/http;msgtype=request"
	ctResponse         = "application/http;msgtype=response"
	ctWarcFields       = "application/warc-fields"
	profileIdentical   = "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"
	profileNotModified = "http://netpreserve.org/warc/1.1/revisit/server-not-modified"
	conformsTo         = "http://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/"
	warcDateLayout     = "2006-01-02T15:04:05.000000Z"
)

// recordEnd terminates every WARC record.
var recordEnd = []byte("\r\n\r\n")

// newRecordID returns a fresh "<urn:uuid:...>" WARC-Record-ID built from a
// random (version 4) UUID.
func newRecordID() string {
	var u [16]byte
	_, _ = rand.Read(u[:]) // crypto/rand.Read never fails (Go 1.24+)
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	var b [36 + 11 + 2]byte
	copy(b[:], "<urn:uuid:")
	dst := b[10:]
	hex.Encode(dst[0:8], u[0:4])
	dst[8] = '-'
	hex.Encode(dst[9:13], u[4:6])
	dst[13] = '-'
	hex.Encode(dst[14:18], u[6:8])
	dst[18] = '-'
	hex.Encode(dst[19:23], u[8:10])
	dst[23] = '-'
	hex.Encode(dst[24:36], u[10:16])
	b[46] = '>'
	return string(b[:47])
}

// sha1Digest formats a SHA-1 sum as a WARC digest, "sha1:BASE32".
func sha1Digest(sum []byte) string {
	return "sha1:" + base32.StdEncoding.EncodeToString(sum)
}

// digestOf returns the WARC SHA-1 digest of the concatenation of parts.
func digestOf(h hash.Hash, parts ...[]byte) string {
	h.Reset()
	for _, p := range parts {
		h.Write(p)
	}
	var sum [sha1.Size]byte
	return sha1Digest(h.Sum(sum[:0]))
}

// field is one WARC named field.
type field struct{ name, value string }

// recordSpec is everything needed to serialise one WARC record. The block is
// the concatenation of block1 and block2 (so a response can reference the
// caller's bytes without copying).
type recordSpec struct {
	fields         []field // in order, without Content-Length
	block1, block2 []byte
	// bodyAt, when positive, is where a response's body starts in block1:
	// the body is already compressed, and block1[bodyAt:], block2 and the
	// record's end go in stored deflate blocks (see member.go).
	bodyAt int
}

func (r *recordSpec) blockLen() int { return len(r.block1) + len(r.block2) }

// appendHeader appends the WARC header of r, the blank line included.
func (r *recordSpec) appendHeader(b []byte) []byte {
	b = append(b, warcVersion...)
	for _, f := range r.fields {
		b = append(b, f.name...)
		b = append(b, ": "...)
		b = append(b, f.value...)
		b = append(b, "\r\n"...)
	}
	b = append(b, "Content-Length: "...)
	b = strconv.AppendInt(b, int64(r.blockLen()), 10)
	b = append(b, "\r\n\r\n"...)
	return b
}

// warcDate formats t as a WARC-Date in UTC with microsecond precision.
func warcDate(t time.Time) string {
	return t.UTC().Format(warcDateLayout)
}

// warcinfoBlock returns the application/warc-fields block of a warcinfo
// record: the fields Heritrix writes and archives expect, each only when
// known.
func warcinfoBlock(o *Options, hostname, ip string) []byte {
	var b bytes.Buffer
	add := func(k, v string) {
		if v == "" {
			return
		}
		b.WriteString(k)
		b.WriteString(": ")
		b.WriteString(v)
		b.WriteString("\r\n")
	}
	add("software", o.Software)
	add("format", "WARC File Format 1.1")
	add("conformsTo", conformsTo)
	add("hostname", hostname)
	add("ip", ip)
	add("operator", o.Operator)
	add("isPartOf", o.IsPartOf)
	add("description", o.Description)
	add("robots", o.Robots)
	add("http-header-user-agent", o.UserAgent)
	return b.Bytes()
}

// localIP returns the first non-loopback unicast address of this machine,
// or "" (the warcinfo record's "ip" field, as Heritrix writes it).
func localIP() string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return ""
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.IsGlobalUnicast() {
			return n.IP.String()
		}
	}
	return ""
}

// NewRecordID returns a fresh "<urn:uuid:...>" WARC-Record-ID built from a
// random (version 4) UUID, for writers of other WARC files (WAT, WET).
func NewRecordID() string { return newRecordID() }

// SHA1Digest returns the WARC digest ("sha1:BASE32") of b.
func SHA1Digest(b []byte) string {
	sum := sha1.Sum(b)
	return sha1Digest(sum[:])
}
