// Package fetch turns a URL and an address into bytes exchanged on the wire.
//
// It holds the network-facing parts of a Petrel agent:
//
//   - name resolution ([Resolver]): a hosts map consulted first, then
//     optionally the system resolver, with positive and negative caching in a
//     bounded cache. Special-use names (RFC 6761: "localhost", .localhost,
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
//
// # Invariants
//
// The Fetcher records the request exactly as written and the response exactly
// as read from the connection (status line, headers, body bytes as
// transferred, chunk framing kept) into bounded buffers. Bodies keep their
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
