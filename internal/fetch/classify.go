package fetch

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
)

// ErrHeaderTooLarge is returned (wrapped) by [Fetcher.Fetch] when the response
// headers exceed Options.MaxHeaderBytes.
var ErrHeaderTooLarge = errors.New("response headers exceed the limit")

// An ErrorKind classifies a fetch failure for statistics and retry decisions.
type ErrorKind int

// The kinds of fetch failure, as returned by [Classify].
const (
	ErrNone           ErrorKind = iota // no error
	ErrDNS                             // the name did not resolve
	ErrRefused                         // the connection was refused
	ErrTimeout                         // a connect, header or total timeout expired
	ErrReset                           // the connection was reset or closed early
	ErrForbidden                       // the address guard refused the destination
	ErrTooLargeHeader                  // the response headers exceeded the limit
	ErrProtocol                        // the peer broke HTTP or TLS (bad status line, bad framing, bad certificate)
	ErrOther                           // anything else (cancellation, bad URL, ...)
)

var kindNames = [...]string{"none", "dns", "refused", "timeout", "reset", "forbidden", "header-too-large", "protocol", "other"}

// String returns a short lower-case name for k, such as "timeout", suitable
// for counters and logs.
func (k ErrorKind) String() string {
	if k < 0 || int(k) >= len(kindNames) {
		return "unknown"
	}
	return kindNames[k]
}

// fetchError is the error type returned by Fetch: it carries its kind,
// decided when the failure happened.
type fetchError struct {
	kind ErrorKind
	url  string
	err  error
	// noConn: no connection to the server was made (see Unreachable).
	noConn bool
}

func (e *fetchError) Error() string {
	return "fetch: GET " + e.url + ": " + e.kind.String() + ": " + e.err.Error()
}

func (e *fetchError) Unwrap() error { return e.err }

// Unreachable reports whether err, returned by [Fetcher.Fetch], is a
// failure to reach the server at all: no connection could be made (it was
// refused, the connect or TLS handshake timed out, there is no route to
// the host), so no request was sent. Such a failure is the host's, not the
// URL's: a timeout or reset after the connection was made is not one.
func Unreachable(err error) bool {
	var fe *fetchError
	if !errors.As(err, &fe) || !fe.noConn {
		return false
	}
	switch fe.kind {
	case ErrRefused, ErrTimeout:
		return true
	}
	return errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH) || errors.Is(err, syscall.EHOSTDOWN)
}

// Classify returns the kind of a failure returned by this package (or by the
// network packages beneath it). It returns ErrNone for a nil error.
func Classify(err error) ErrorKind {
	if err == nil {
		return ErrNone
	}
	var fe *fetchError
	if errors.As(err, &fe) {
		return fe.kind
	}
	return classify(err, false)
}

// classify decides the kind of err; connected tells whether a connection to
// the server was established, which turns unrecognised errors into protocol
// errors.
func classify(err error, connected bool) ErrorKind {
	msg := err.Error()
	var dnsErr *net.DNSError
	var netErr net.Error
	var recErr tls.RecordHeaderError
	var certErr *tls.CertificateVerificationError
	var unkAuth x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var invErr x509.CertificateInvalidError
	switch {
	case errors.Is(err, ErrForbiddenAddress):
		return ErrForbidden
	case errors.Is(err, ErrHeaderTooLarge), strings.Contains(msg, "server response headers exceeded"),
		strings.Contains(msg, "header list larger than"):
		return ErrTooLargeHeader
	case errors.Is(err, ErrNoSuchHost), errors.Is(err, ErrSpecialUseName), errors.As(err, &dnsErr):
		return ErrDNS
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded),
		errors.As(err, &netErr) && netErr.Timeout():
		return ErrTimeout
	case errors.Is(err, context.Canceled):
		return ErrOther
	case errors.Is(err, syscall.ECONNREFUSED):
		return ErrRefused
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ECONNABORTED),
		errors.Is(err, syscall.EPIPE), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return ErrReset
	case errors.As(err, &recErr), errors.As(err, &certErr), errors.As(err, &unkAuth),
		errors.As(err, &hostErr), errors.As(err, &invErr),
		strings.Contains(msg, "malformed HTTP"), strings.Contains(msg, "malformed MIME"),
		strings.Contains(msg, "bad Content-Length"), strings.Contains(msg, "invalid Trailer"),
		strings.Contains(msg, "chunked"), strings.Contains(msg, "unsupported transfer encoding"):
		return ErrProtocol
	case connected:
		return ErrProtocol
	}
	return ErrOther
}

// Permanent reports whether err is a failure a retry would meet again:
// the head of the server's response was malformed (a bad status line, a
// header line with control bytes, such as a Location holding them) or
// too large. A page that fails so is given up at once.
func Permanent(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, ErrHeaderTooLarge) {
		return true
	}
	msg := err.Error()
	return strings.Contains(msg, "malformed MIME header") || strings.Contains(msg, "malformed HTTP")
}
