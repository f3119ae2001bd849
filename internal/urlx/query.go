package urlx

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/encoding"
)

// QueryEncoder encodes the query of references found in a document whose
// character encoding is not UTF-8, as the URL Standard says a browser does:
// a link's path is always UTF-8, but its query is encoded in the document's
// encoding, and a character that encoding lacks becomes "&#N;" (N its code
// point in decimal), percent-encoded as "%26%23N%3B". (whatwg-url's
// encoding override covers single-byte encodings only.)
//
// A QueryEncoder is used by one goroutine at a time; its zero value (or
// nil) encodes as UTF-8, which needs nothing done.
type QueryEncoder struct {
	enc *encoding.Encoder
	buf []byte
}

// NewQueryEncoder returns a QueryEncoder for enc, or nil when enc is nil
// (UTF-8, or an encoding whose queries are UTF-8: UTF-16 documents' are).
func NewQueryEncoder(enc encoding.Encoding) *QueryEncoder {
	if enc == nil {
		return nil
	}
	return &QueryEncoder{enc: enc.NewEncoder()}
}

// ResolveEncoded is Resolve with the non-ASCII characters of ref's query
// encoded by q first (q nil: Resolve).
func (u URL) ResolveEncoded(ref string, q *QueryEncoder) (URL, error) {
	if q != nil {
		ref = q.encodeQuery(ref)
	}
	return u.Resolve(ref)
}

// encodeQuery returns ref with the non-ASCII characters of its query (from
// the first '?' to the first '#' after it) percent-encoded in q's
// encoding; ref itself when its query is ASCII.
func (q *QueryEncoder) encodeQuery(ref string) string {
	start := strings.IndexByte(ref, '?')
	if start < 0 {
		return ref
	}
	end := len(ref)
	if i := strings.IndexByte(ref[start:], '#'); i >= 0 {
		end = start + i
	}
	query := ref[start:end]
	ascii := true
	for i := 0; i < len(query); i++ {
		if query[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		return ref
	}
	b := append(q.buf[:0], ref[:start]...)
	for _, r := range query {
		if r < utf8.RuneSelf {
			b = append(b, byte(r))
			continue
		}
		enc, err := q.enc.Bytes(utf8.AppendRune(nil, r))
		// An encoder fails on a character its encoding lacks, or (the
		// HTML index's encoders) writes it "&#N;": either way the URL
		// Standard's form.
		if err != nil || r == utf8.RuneError || len(enc) > 0 && enc[0] == '&' {
			b = append(b, "%26%23"...)
			b = strconv.AppendInt(b, int64(r), 10)
			b = append(b, "%3B"...)
			continue
		}
		for _, c := range enc {
			switch {
			case c >= utf8.RuneSelf || c == '%' || c == '#':
				b = append(b, '%', hexDigits[c>>4], hexDigits[c&15])
			default:
				b = append(b, c) // an ASCII byte of a multi-byte sequence, as the encoder gives it
			}
		}
	}
	b = append(b, ref[end:]...)
	q.buf = b
	return string(b)
}

const hexDigits = "0123456789ABCDEF"
