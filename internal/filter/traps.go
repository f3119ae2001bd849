package filter

import (
	"strings"

	"github.com/petrel-crawler/petrel/internal/urlx"
)

// A Cut says which trap rule refused a URL; Keep means none did.
type Cut int

// The trap rules, in the order Traps.Check applies them.
const (
	Keep               Cut = iota // no rule refused the URL
	CutLength                     // the URL is longer than Traps.MaxLength
	CutRedirects                  // the redirect chain is longer than Traps.MaxRedirects allows
	CutDepth                      // the URL is more than Traps.MaxDepth links from a seed
	CutRepeatedSegment            // a path segment occurs more than Traps.MaxSegmentRepeats times
)

// String returns a short lower-case name for c, such as "depth", suitable
// for logs.
func (c Cut) String() string {
	switch c {
	case Keep:
		return "keep"
	case CutLength:
		return "length"
	case CutRedirects:
		return "redirects"
	case CutDepth:
		return "depth"
	case CutRepeatedSegment:
		return "repeated-segment"
	}
	return "unknown"
}

// Default trap limits.
const (
	DefaultMaxLength         = 2048 // bytes of the whole URL
	DefaultMaxRedirects      = 5    // URLs of one redirect chain, the first included
	DefaultMaxSegmentRepeats = 3    // occurrences of one path segment
)

// Traps holds the limits that end crawler traps: URLs that a site can
// generate without end (infinite calendars, ever deeper relative paths,
// session ids). A zero limit disables its rule. Traps is a value with no
// state, so it is safe for concurrent use.
type Traps struct {
	// MaxLength is the longest URL followed, in bytes of its normalised
	// form (Heritrix and BUbiNG use 2 KiB).
	MaxLength int
	// MaxRedirects bounds a redirect chain: a URL reached by redirects
	// >= MaxRedirects redirects from the first URL of its chain is cut, so a
	// chain fetches at most MaxRedirects URLs.
	MaxRedirects int
	// MaxDepth is the hop limit: a URL more than MaxDepth links from a seed
	// is cut (redirects do not count as hops). 0 means no limit.
	MaxDepth int
	// MaxSegmentRepeats cuts a URL whose path holds one non-empty segment
	// more than MaxSegmentRepeats times, consecutive or not (/a/a/a/a/,
	// /x/y/x/y/x/y/x/y/). Heritrix's PathologicalPathDecideRule counts only
	// consecutive repetitions; counting all of them also ends alternating
	// traps, and real sites rarely repeat a segment four times.
	MaxSegmentRepeats int
}

// DefaultTraps returns the default limits: URLs of 2 KiB, chains of 5
// redirects, segments repeated 3 times, no hop limit.
func DefaultTraps() Traps {
	return Traps{MaxLength: DefaultMaxLength, MaxRedirects: DefaultMaxRedirects, MaxSegmentRepeats: DefaultMaxSegmentRepeats}
}

// Check applies the rules to u, found depth links from a seed after
// redirects redirects, and returns the first rule that refuses it, or Keep.
func (t Traps) Check(u urlx.URL, depth, redirects int) Cut {
	if t.MaxLength > 0 && URLLength(u) > t.MaxLength {
		return CutLength
	}
	if t.MaxRedirects > 0 && redirects >= t.MaxRedirects {
		return CutRedirects
	}
	if t.MaxDepth > 0 && depth > t.MaxDepth {
		return CutDepth
	}
	if t.MaxSegmentRepeats > 0 && MaxSegmentRepeats(u.Path()) > t.MaxSegmentRepeats {
		return CutRepeatedSegment
	}
	return Keep
}

// URLLength returns the length in bytes of u's string form.
func URLLength(u urlx.URL) int {
	n := len(u.Scheme) + len("://") + len(u.Host) + len(u.PathQuery)
	if u.Port != "" {
		n += 1 + len(u.Port)
	}
	return n
}

// MaxSegmentRepeats returns how many times the most frequent non-empty
// segment of path occurs in it. It allocates nothing for paths of up to 16
// segments.
func MaxSegmentRepeats(path string) int {
	var arr [16]string
	segs := arr[:0]
	best := 0
	for len(path) > 0 {
		i := strings.IndexByte(path, '/')
		var seg string
		if i < 0 {
			seg, path = path, ""
		} else {
			seg, path = path[:i], path[i+1:]
		}
		if seg == "" {
			continue
		}
		n := 1
		for _, s := range segs {
			if s == seg {
				n++
			}
		}
		best = max(best, n)
		segs = append(segs, seg)
	}
	return best
}
