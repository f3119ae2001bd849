// Package fetch turns a URL and an address into bytes exchanged on the wire.
//
// It holds the network-facing parts of a Petrel agent:
//
//   - name resolution ([Resolver]): a hosts map consulted first, then
//     optionally the system resolver (Go's own, one query in flight per
//     name), with positive and negative caching in a bounded cache, each
//     answer kept for its DNS TTL within bounds (dnsttl.go reads the TTLs
//     of the answers as the resolver receives them). Special-use names (RFC 6761: "localhost", .localhost,
//     .test, .invalid, .example, and RFC 7686's .onion) never reach DNS: they
//     resolve through the hosts map or fail at once with [ErrSpecialUseName].
//   - the address guard ([Guard]): unless private destinations are allowed,
//     loopback, private, link-local, multicast, unspecified and CGNAT
//     addresses (and their IPv4-mapped forms) are refused. The check is made
//     on the address actually dialled, inside the dialer, so neither DNS nor a
//     caller can smuggle one in.
//   - HTTP fetching ([Fetcher]): one request, no redirects followed, no
//     retries, over a net/http Transport tuned for crawling, dialling the
//     address chosen by the DNS stage while keeping the host name for the
//     Host header, SNI and certificate checks.
//   - HTTP/2 (h2.go, with Options.HTTP2): the TLS handshake offers "h2"
//     besides "http/1.1" by ALPN; a server that chooses it gets its
//     requests over an HTTP/2 connection of golang.org/x/net/http2, one
//     per host name and port, kept for the host's next requests (at most
//     Options.MaxIdleConns of them idle, least recently used closed
//     first). It carries one request at a time as HTTP/1.1 does: the
//     frontier sends a host one request at a time.
//
// # Invariants
//
// The Fetcher records the request exactly as written and the response exactly
// as read from the connection (status line, headers, body bytes as
// transferred, chunk framing kept) into bounded buffers. Over HTTP/2, whose
// frames and compressed headers are no HTTP/1.1 message, it records both
// in HTTP/1.1 form instead, as the IIPC's WARC extension for HTTP/2 says:
// the request line and fields sent, the status line without a reason
// phrase, the fields received with a Content-Length stating the body's
// length (a differing one of the server's kept as X-Orig-Content-Length),
// and the body as its DATA frames carried it. Bodies keep their
// Content-Encoding: the transport never decompresses; [DecodeBody] undoes the
// encoding, with the decoded size capped, on the way to a parser (gzip and
// deflate with klauspost/compress's inflater, brotli with andybalholm's; the
// decompressors of a Fetcher's responses are pooled by the Fetcher).
//
// Every buffer is bounded: bodies by Options.MaxBody, headers by
// Options.MaxHeaderBytes, the raw capture by a bound derived from both, the
// DNS cache by ResolverOptions.MaxEntries, the idle keep-alive connections
// by Options.MaxIdleConns, the TLS sessions kept for resumption (one per
// host name) by Options.TLSSessions (robots.txt files are read by package
// robots).
//
// The package starts no goroutines of its own beyond those of net/http's
// Transport, which end when their connections close ([Fetcher.CloseIdle]).
// Nothing in the package uses global mutable state.
package fetch
