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
// parameters sorted. A leading "www." (or "www2." and the like) is dropped;
// an IPv4 address is reversed like a name, an IPv6 address kept in
// brackets, as warcio's cdx-index does. A URL that does not parse is
// returned lower-cased.
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
	if ip := net.ParseIP(host); ip != nil && ip.To4() == nil {
		b.WriteString("[" + host + "]")
	} else {
		if ip == nil {
			host = trimWWW(host)
		}
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

// trimWWW drops a leading "www." or "www" and digits then "." (www2.), as
// warcio and the Python surt package do.
func trimWWW(host string) string {
	if !strings.HasPrefix(host, "www") {
		return host
	}
	i := 3
	for i < len(host) && host[i] >= '0' && host[i] <= '9' {
		i++
	}
	if i < len(host) && host[i] == '.' {
		return host[i+1:]
	}
	return host
}
