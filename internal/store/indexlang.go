package store

import (
	"io"
	"strings"

	gowarc "github.com/nlnwa/gowarc/v3"
)

// IndexOptions say what a CDXJ index made from WARC files holds beyond
// what their records say.
type IndexOptions struct {
	// Languages, when not nil, gives the lines of 2xx pages the languages
	// field it finds in their payloads, as the crawl's --languages gives
	// them (the WARC records do not hold them): see indexLanguages.
	Languages Languages
}

// Languages finds the languages of a stored payload for its CDXJ line.
type Languages interface {
	// PayloadLanguages returns the languages of the payload p of a
	// response from uri as the languages field holds them (ISO 639-3
	// codes, largest share first, comma-separated); "" leaves the field
	// out.
	PayloadLanguages(uri string, p *Payload) string
}

// maxIndexPayload bounds what of a record's block is read for its
// languages.
const maxIndexPayload = 32 << 20

// revisitLanguages bounds the payload digests whose languages are kept
// for the revisit records that refer to them.
const revisitLanguages = 1 << 16

// indexLanguages finds the languages fields of one index made from WARC
// files: a 2xx response record's from its payload (Languages); an
// identical-payload revisit record's are those of the response with its
// payload digest read before it in the same making (of the last
// revisitLanguages such digests), else it has none (a revisit of an
// earlier crawl's capture, or of one in a file whose index was not made
// again). A nil *indexLanguages finds none.
type indexLanguages struct {
	detect   Languages
	byDigest map[string]string
	order    []string // the digests of byDigest, a ring
	next     int
}

// newIndexLanguages returns the languages finder o asks for, or nil.
func newIndexLanguages(o IndexOptions) *indexLanguages {
	if o.Languages == nil {
		return nil
	}
	return &indexLanguages{detect: o.Languages, byDigest: make(map[string]string)}
}

// record returns the languages field of the record wr of uri, whose
// HTTP status is status.
func (l *indexLanguages) record(wr gowarc.WarcRecord, uri string, status int) string {
	if l == nil || status < 200 || status >= 300 {
		return ""
	}
	h := wr.WarcHeader()
	digest := h.Get(gowarc.WarcPayloadDigest)
	switch {
	case wr.Type() == gowarc.Revisit && strings.HasSuffix(h.Get(gowarc.WarcProfile), "/identical-payload-digest"):
		return l.byDigest[digest]
	case wr.Type() != gowarc.Response:
		return ""
	}
	rd, err := wr.Block().RawBytes()
	if err != nil {
		return ""
	}
	block, err := io.ReadAll(io.LimitReader(rd, maxIndexPayload))
	if err != nil {
		return ""
	}
	p := DecodeResponse(block, h.Get(gowarc.WarcTruncated), maxIndexPayload)
	langs := l.detect.PayloadLanguages(uri, &p)
	if langs != "" && digest != "" {
		l.remember(digest, langs)
	}
	return langs
}

// remember keeps the languages of a payload digest, forgetting the
// oldest beyond revisitLanguages.
func (l *indexLanguages) remember(digest, langs string) {
	if _, ok := l.byDigest[digest]; ok {
		return
	}
	if len(l.order) < revisitLanguages {
		l.order = append(l.order, digest)
	} else {
		delete(l.byDigest, l.order[l.next])
		l.order[l.next] = digest
		l.next = (l.next + 1) % revisitLanguages
	}
	l.byDigest[digest] = langs
}
