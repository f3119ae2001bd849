package frontier

import (
	"encoding/binary"
	"fmt"
	"math/bits"
)

// Meta travels with a URL from Enqueue to its Task: how it was found. It is
// fixed when the URL is first enqueued and never changes: the sieve hashes
// a key without it, so the first occurrence of a URL decides its Meta.
//
// Everywhere a queued URL is kept or sent (the sieve's files, the ready
// queue, the visit-state queues in RAM, the virtualizer, checkpoints, and
// the exchange between the agents of a crawl) it is a record: the Meta's
// MetaLen-byte encoding, then the URL. Format, version 1 (integers
// big-endian):
//
//	offset size
//	0      1    version (MetaVersion)
//	1      2    Depth
//	3      1    Redirects
//	4      1    Embeds
//	5      4    Path (HopPath)
//	9      4    Seed
//	13     8    Via
//
// A record whose first byte is not MetaVersion is refused by DecodeMeta
// with an error naming the version found.
type Meta struct {
	Depth     uint16  // link hops (L) from the seed (saturating)
	Redirects uint8   // redirects followed in the chain that led here (saturating)
	Embeds    uint8   // embed, speculative and prerequisite hops since the last link hop (saturating)
	Path      HopPath // the last hops from the seed
	Seed      uint32  // the seed the URL descends from: its number among the crawl's seeds, from 1 (0: none known)
	Via       uint64  // fingerprint (sieve.Hash) of the URL of the page it was found on (0 for a seed)
}

// MetaVersion is the version of the Meta encoding, its first byte.
const MetaVersion = 1

// MetaLen is the length of an encoded Meta.
const MetaLen = 21

// Append appends the encoding of m to b and returns the extended slice.
func (m Meta) Append(b []byte) []byte {
	b = append(b, MetaVersion, byte(m.Depth>>8), byte(m.Depth), m.Redirects, m.Embeds)
	b = binary.BigEndian.AppendUint32(b, uint32(m.Path))
	b = binary.BigEndian.AppendUint32(b, m.Seed)
	return binary.BigEndian.AppendUint64(b, m.Via)
}

// DecodeMeta decodes the Meta at the start of rec (a record, or at least
// its first MetaLen bytes).
func DecodeMeta(rec []byte) (Meta, error) {
	if len(rec) < MetaLen {
		return Meta{}, fmt.Errorf("frontier: record of %d bytes is shorter than its metadata (%d)", len(rec), MetaLen)
	}
	if rec[0] != MetaVersion {
		return Meta{}, fmt.Errorf("frontier: record with metadata version %d; this Petrel reads version %d", rec[0], MetaVersion)
	}
	return decodeMeta(rec), nil
}

// decodeMeta decodes a Meta known to be of the current version.
func decodeMeta[T string | []byte](b T) Meta {
	return Meta{
		Depth:     uint16(b[1])<<8 | uint16(b[2]),
		Redirects: b[3],
		Embeds:    b[4],
		Path:      HopPath(uint32(b[5])<<24 | uint32(b[6])<<16 | uint32(b[7])<<8 | uint32(b[8])),
		Seed:      uint32(b[9])<<24 | uint32(b[10])<<16 | uint32(b[11])<<8 | uint32(b[12]),
		Via: uint64(b[13])<<56 | uint64(b[14])<<48 | uint64(b[15])<<40 | uint64(b[16])<<32 |
			uint64(b[17])<<24 | uint64(b[18])<<16 | uint64(b[19])<<8 | uint64(b[20]),
	}
}

// AppendRecord appends the record of url with m (Meta, then URL) to dst.
func AppendRecord(dst []byte, m Meta, url string) []byte {
	return append(m.Append(dst), url...)
}

// SplitRecord returns the Meta and the URL of a record.
func SplitRecord(rec []byte) (Meta, []byte, error) {
	m, err := DecodeMeta(rec)
	if err != nil {
		return Meta{}, nil, err
	}
	return m, rec[MetaLen:], nil
}

// Hop is one step of a hop path, as Heritrix names them.
type Hop uint8

const (
	HopLink         Hop = 1 + iota // L: a link of a page
	HopRedirect                    // R: a redirect target
	HopEmbed                       // E: a page requisite (image, style sheet, script, frame)
	HopSpeculative                 // X: a URL guessed from a script or text
	HopPrerequisite                // P: something fetched first (e.g. robots.txt, DNS)
	HopManifest                    // M: a URL a manifest names (a robots.txt Sitemap line, a sitemap index's sitemap)
	HopRevisit                     // V: a revisit of a URL fetched before, due in a revisit crawl's schedule
)

// Letter returns the hop's letter ('?' for an unknown hop).
func (h Hop) Letter() byte {
	if h >= HopLink && h <= HopRevisit {
		return "LREXPMV"[h-1]
	}
	return '?'
}

// HopPath is the end of a URL's hop path: its last MaxPathHops hops, three
// bits each, the most recent in the low bits, under a marker bit that gives
// the length. Bit 31 says that older hops were dropped. The zero value is
// the empty path (a seed's).
type HopPath uint32

// MaxPathHops is how many of the last hops a HopPath keeps.
const MaxPathHops = 10

const pathTruncated = 1 << 31

// Len returns the number of hops kept.
func (p HopPath) Len() int {
	v := uint32(p) &^ pathTruncated
	if v == 0 {
		return 0
	}
	return (bits.Len32(v) - 1) / 3
}

// Truncated reports whether hops older than the last MaxPathHops were
// dropped.
func (p HopPath) Truncated() bool { return p&pathTruncated != 0 }

// Push returns p followed by h.
func (p HopPath) Push(h Hop) HopPath {
	n := p.Len()
	v := uint32(p) &^ pathTruncated
	trunc := uint32(p) & pathTruncated
	if n == 0 {
		v = 1
	}
	if n == MaxPathHops {
		v = 1<<(3*(MaxPathHops-1)) | v&(1<<(3*(MaxPathHops-1))-1)
		trunc = pathTruncated
	}
	return HopPath(trunc | v<<3 | uint32(h&7))
}

// Manifests returns how many manifest hops (M) end the path, redirects
// (R) among them not counted: 0 when the path does not end in M R*, 1 for
// a sitemap named by a robots.txt or a seed's host, 2 for a sitemap named
// by a sitemap index. A truncated path counts only the hops it kept.
func (p HopPath) Manifests() int {
	n, ms := p.Len(), 0
	for i := 0; i < n; i++ {
		switch Hop((uint32(p) >> (3 * i)) & 7) {
		case HopManifest:
			ms++
		case HopRedirect:
		default:
			return ms
		}
	}
	return ms
}

// Last returns the most recent hop (0 for the empty path).
func (p HopPath) Last() Hop {
	if p.Len() == 0 {
		return 0
	}
	return Hop(p & 7)
}

// String returns the hop letters, oldest first, as Heritrix writes a hop
// path ("" for a seed); a truncated path is the last MaxPathHops hops.
func (p HopPath) String() string {
	n := p.Len()
	b := make([]byte, n)
	for i := n - 1; i >= 0; i-- {
		b[i] = Hop((uint32(p) >> (3 * (n - 1 - i))) & 7).Letter()
	}
	return string(b)
}

// Next returns the Meta of a URL found by hop h from the page with Meta m
// whose URL has fingerprint via: a link or manifest hop adds one to Depth
// and starts a new redirect chain and embed count; a redirect adds one to
// Redirects; an embed, speculative or prerequisite hop adds one to Embeds.
// Seed is kept.
func (m Meta) Next(h Hop, via uint64) Meta {
	switch h {
	case HopLink, HopManifest:
		if m.Depth < 0xffff {
			m.Depth++
		}
		m.Redirects, m.Embeds = 0, 0
	case HopRedirect:
		if m.Redirects < 0xff {
			m.Redirects++
		}
	default:
		if m.Embeds < 0xff {
			m.Embeds++
		}
	}
	m.Path = m.Path.Push(h)
	m.Via = via
	return m
}

// Link returns the Meta of a link of the page with Meta m (see Next).
func (m Meta) Link(via uint64) Meta { return m.Next(HopLink, via) }

// Redirect returns the Meta of a redirect target of the URL with Meta m:
// the same depth, one more redirect (see Next).
func (m Meta) Redirect(via uint64) Meta { return m.Next(HopRedirect, via) }
