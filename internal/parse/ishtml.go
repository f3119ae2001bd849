package parse

import (
	"mime"
	"net/http"
	"strings"
)

// IsHTML reports whether a response should be parsed as HTML: its
// Content-Type is text/html or application/xhtml+xml and its body sniffs as
// text or markup (by http.DetectContentType), so that, say, a PNG image or a
// PDF document mislabelled text/html is not HTML. Without a Content-Type,
// the body alone decides: it must sniff as text/html.
func IsHTML(header http.Header, body []byte) bool {
	sniffed := http.DetectContentType(body)
	ct := header.Get("Content-Type")
	if strings.TrimSpace(ct) == "" {
		return strings.HasPrefix(sniffed, "text/html")
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		// A malformed parameter list: judge by the media type alone.
		mt = strings.ToLower(strings.TrimSpace(strings.SplitN(ct, ";", 2)[0]))
	}
	if mt != "text/html" && mt != "application/xhtml+xml" {
		return false
	}
	return strings.HasPrefix(sniffed, "text/")
}

// IsCSS reports whether a response is a style sheet: its Content-Type is
// text/css, or it has none and its URL's path ends in ".css".
func IsCSS(header http.Header, path string) bool {
	ct := header.Get("Content-Type")
	if strings.TrimSpace(ct) == "" {
		if i := strings.IndexByte(path, '?'); i >= 0 {
			path = path[:i]
		}
		return strings.HasSuffix(strings.ToLower(path), ".css")
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		mt = strings.ToLower(strings.TrimSpace(strings.SplitN(ct, ";", 2)[0]))
	}
	return mt == "text/css"
}
