package urlx

import (
	"errors"
	"fmt"
	"strings"

	whatwg "github.com/nlnwa/whatwg-url/url"

	"github.com/petrel-crawler/petrel/internal/ascii"
)

// MaxLength is the longest input, in bytes, that Parse, Resolve and
// Normalize accept. Longer references are rejected with ErrTooLong: they are
// almost always crawler traps or inlined data.
const MaxLength = 8192

var (
	// ErrUnsupportedScheme is wrapped by the errors returned for URLs whose
	// scheme is neither http nor https.
	ErrUnsupportedScheme = errors.New("unsupported scheme")
	// ErrTooLong is wrapped by the errors returned for inputs longer than
	// MaxLength.
	ErrTooLong = errors.New("url too long")
	// ErrInvalidBase is wrapped by the errors Resolve returns when the
	// receiver is not a valid http or https URL (for instance the zero URL).
	ErrInvalidBase = errors.New("invalid base url")
)

// parser is the WHATWG parser used for every input the fast path declines.
// It is configured once and never modified; it is safe for concurrent use.
var parser = whatwg.NewParser()

// URL is an absolute, normalised http or https URL, split the way the
// crawler uses it: the scheme and authority identify a politeness key, the
// PathQuery is what is requested from it.
//
// A URL obtained from Parse or Resolve is always normalised; two such URLs
// denote the same resource if and only if they are equal (==). The zero URL
// is not valid.
type URL struct {
	Scheme    string // "http" or "https"
	Host      string // lower-case ASCII; IPv6 literal in brackets
	Port      string // "" when it is the scheme's default
	PathQuery string // path plus "?query" when present; always starts with "/"
}

// Parse parses raw, which must be an absolute http or https URL, and
// normalises it. Leading and trailing spaces and control characters are
// ignored, as browsers do.
func Parse(raw string) (URL, error) {
	return parseRef(nil, raw, true)
}

// Resolve resolves the reference ref, which may be relative, against u and
// normalises the result, as a browser resolves a link found on page u.
// References with a scheme other than http or https (javascript:, mailto:,
// data: ...) are an error wrapping ErrUnsupportedScheme.
func (u URL) Resolve(ref string) (URL, error) {
	if !u.valid() {
		return URL{}, fmt.Errorf("urlx: resolve %s: %w", short(ref), ErrInvalidBase)
	}
	return parseRef(&u, ref, true)
}

// parseRef parses ref against base (nil for an absolute URL), by the fast
// path when fast is set and it accepts ref, else by the WHATWG parser. Inputs
// and results longer than MaxLength are rejected.
func parseRef(base *URL, ref string, fast bool) (URL, error) {
	op := "parse"
	if base != nil {
		op = "resolve"
	}
	if len(ref) > MaxLength {
		return URL{}, fmt.Errorf("urlx: %s %s: %w", op, short(ref), ErrTooLong)
	}
	var (
		u   URL
		ok  bool
		err error
	)
	if fast {
		if scheme, found := leadingScheme(ref); found && !ascii.EqualFold(scheme, "http") && !ascii.EqualFold(scheme, "https") {
			// javascript:, mailto:, data: ... are common in links: reject
			// them without running the WHATWG parser.
			return URL{}, fmt.Errorf("urlx: %s %s: %w %q", op, short(ref), ErrUnsupportedScheme, toLowerASCII(scheme))
		}
		u, ok = fastParse(base, ref)
	}
	if !ok {
		if u, err = slowParse(base, ref); err != nil {
			return URL{}, err
		}
	}
	if u.stringLen() > MaxLength {
		return URL{}, fmt.Errorf("urlx: %s %s: %w", op, short(ref), ErrTooLong)
	}
	return u, nil
}

// Normalize parses the absolute URL raw and returns its normalised form.
func Normalize(raw string) (string, error) {
	u, err := Parse(raw)
	if err != nil {
		return "", err
	}
	return u.String(), nil
}

// valid reports whether u can serve as a base URL.
func (u URL) valid() bool {
	return (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" &&
		strings.HasPrefix(u.PathQuery, "/")
}

// String returns the URL as scheme://host[:port]/path?query.
func (u URL) String() string {
	return string(u.AppendString(make([]byte, 0, u.stringLen())))
}

func (u URL) stringLen() int {
	n := len(u.Scheme) + 3 + len(u.Host) + len(u.PathQuery)
	if u.Port != "" {
		n += 1 + len(u.Port)
	}
	return n
}

// AppendString appends the string form of u (as returned by String) to dst
// and returns the extended buffer.
func (u URL) AppendString(dst []byte) []byte {
	dst = append(dst, u.Scheme...)
	dst = append(dst, "://"...)
	dst = append(dst, u.Host...)
	if u.Port != "" {
		dst = append(dst, ':')
		dst = append(dst, u.Port...)
	}
	return append(dst, u.PathQuery...)
}

// Authority returns host[:port], the port present only when it is not the
// scheme's default.
func (u URL) Authority() string {
	if u.Port == "" {
		return u.Host
	}
	return u.Host + ":" + u.Port
}

// SchemeAuthority returns scheme://host[:port]: the politeness key under
// --assign authority, and what robots.txt and the per-key budget go by.
func (u URL) SchemeAuthority() string {
	if u.Port == "" {
		return u.Scheme + "://" + u.Host
	}
	return u.Scheme + "://" + u.Host + ":" + u.Port
}

// HostPort returns host:port with the scheme's default port filled in, in the
// form net.Dial expects (IPv6 literals keep their brackets).
func (u URL) HostPort() string {
	p := u.Port
	if p == "" {
		p = DefaultPort(u.Scheme)
	}
	return u.Host + ":" + p
}

// Hostname returns the host without the brackets of an IPv6 literal.
func (u URL) Hostname() string {
	if len(u.Host) > 1 && u.Host[0] == '[' && u.Host[len(u.Host)-1] == ']' {
		return u.Host[1 : len(u.Host)-1]
	}
	return u.Host
}

// Path returns the path part of PathQuery, without the query.
func (u URL) Path() string {
	if i := strings.IndexByte(u.PathQuery, '?'); i >= 0 {
		return u.PathQuery[:i]
	}
	return u.PathQuery
}

// RawQuery returns the query part of PathQuery, without the '?'; it is ""
// when there is no query.
func (u URL) RawQuery() string {
	if i := strings.IndexByte(u.PathQuery, '?'); i >= 0 {
		return u.PathQuery[i+1:]
	}
	return ""
}

// DefaultPort returns the default port of scheme ("80" for http, "443" for
// https), or "" for any other scheme.
func DefaultPort(scheme string) string {
	switch scheme {
	case "http":
		return "80"
	case "https":
		return "443"
	}
	return ""
}

// slowParse parses ref (against base when base is not nil) with the WHATWG
// parser, then applies Petrel's normalisation.
func slowParse(base *URL, ref string) (URL, error) {
	var (
		w   *whatwg.Url
		err error
		op  = "parse"
	)
	if base == nil {
		w, err = parser.Parse(ref)
	} else {
		op = "resolve"
		var b *whatwg.Url
		b, err = parser.Parse(base.String())
		if err == nil {
			w, err = parser.BasicParser(ref, b, nil, whatwg.NoState)
		}
	}
	if err != nil {
		if u, ok := asciiDomain(base, ref); ok {
			return u, nil
		}
		return URL{}, fmt.Errorf("urlx: %s %s: %w", op, short(ref), err)
	}
	scheme := w.Scheme()
	switch scheme {
	case "http":
		scheme = "http"
	case "https":
		scheme = "https"
	default:
		return URL{}, fmt.Errorf("urlx: %s %s: %w %q", op, short(ref), ErrUnsupportedScheme, scheme)
	}
	host := w.Hostname()
	if host == "" {
		return URL{}, fmt.Errorf("urlx: %s %s: empty host", op, short(ref))
	}
	port := w.Port()
	if port == DefaultPort(scheme) {
		port = ""
	}
	var arr [256]byte
	buf := append(arr[:0], host...)
	if port != "" {
		buf = append(buf, ':')
		buf = append(buf, port...)
	}
	pqStart := len(buf)
	path := w.Pathname()
	if path == "" {
		buf = append(buf, '/')
	} else {
		buf = appendEscapes(buf, path)
	}
	if q := w.Query(); q != "" {
		buf = append(buf, '?')
		buf = appendEscapes(buf, q)
	}
	return assemble(scheme, buf, len(host), pqStart), nil
}

// assemble builds a URL whose host, optional ":port" and path+query are held,
// in that order, in buf. It allocates one string.
func assemble(scheme string, buf []byte, hostLen, pqStart int) URL {
	s := string(buf)
	u := URL{Scheme: scheme, Host: s[:hostLen], PathQuery: s[pqStart:]}
	if pqStart > hostLen {
		u.Port = s[hostLen+1 : pqStart]
	}
	return u
}

// leadingScheme returns the scheme of ref when ref starts, with no leading
// space or control character, with a WHATWG scheme (an ASCII letter, then
// letters, digits, '+', '-' or '.') followed by ':'.
func leadingScheme(ref string) (string, bool) {
	for i := 0; i < len(ref); i++ {
		c := ref[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case i > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'):
		case i > 0 && c == ':':
			return ref[:i], true
		default:
			return "", false
		}
	}
	return "", false
}

// short quotes s for an error message, truncating it when long.
func short(s string) string {
	const max = 128
	if len(s) > max {
		return fmt.Sprintf("%q...", s[:max])
	}
	return fmt.Sprintf("%q", s)
}
