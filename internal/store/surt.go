package store

import (
	"net"
	"net/url"
	"slices"
	"strings"
)

// SURT returns the Sort-friendly URI Reordering Transform key of rawURL as
// CDXJ indexes (pywb, the Python surt package) compute it: scheme, user
// info and fragment dropped, host lower-cased with a leading "www." removed
// and its labels reversed and joined by ",", a non-default port kept as
// ":port", then ")" and the lower-cased path and query with the query's
// parameters sorted. An IP address host is not reversed. A URL that does not
// parse is returned lower-cased.
//
//	SURT("https://www.Example.com/A?b=2&a=1") == "com,example)/a?a=1&b=2"
func SURT(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil || u.Host == "" {
		return strings.ToLower(rawURL)
	}
	host := strings.ToLower(u.Hostname())
	host = strings.TrimSuffix(host, ".")
	port := u.Port()
	switch {
	case port == "80" && u.Scheme == "http", port == "443" && u.Scheme == "https":
		port = ""
	}
	var b strings.Builder
	if net.ParseIP(host) != nil {
		b.WriteString(host)
	} else {
		host = strings.TrimPrefix(host, "www.")
		labels := strings.Split(host, ".")
		slices.Reverse(labels)
		b.WriteString(strings.Join(labels, ","))
	}
	if port != "" {
		b.WriteByte(':')
		b.WriteString(port)
	}
	b.WriteByte(')')
	path := u.EscapedPath()
	if path == "" {
		path = "/"
	}
	b.WriteString(strings.ToLower(path))
	if u.RawQuery != "" {
		params := strings.Split(strings.ToLower(u.RawQuery), "&")
		slices.Sort(params)
		b.WriteByte('?')
		b.WriteString(strings.Join(params, "&"))
	}
	return b.String()
}
