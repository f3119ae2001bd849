package fetch

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"
)

// TLSVerify says what a Fetcher does with a server's certificate. Real
// crawls meet expired, self-signed and mis-named certificates on much of
// the long tail; an archive wants those pages too (Heritrix's default
// trust level captures them, BUbiNG has acceptAllCertificates).
type TLSVerify uint8

const (
	// TLSRecord connects whatever the certificate, verifies it all the
	// same, and records the outcome in Response.TLS. The default.
	TLSRecord TLSVerify = iota
	// TLSStrict refuses a connection whose certificate does not verify
	// (the handshake fails with the verification error).
	TLSStrict
	// TLSOff connects without verifying.
	TLSOff
)

// ParseTLSVerify reads a --tls-verify value: strict, record or off.
func ParseTLSVerify(s string) (TLSVerify, error) {
	switch s {
	case "record":
		return TLSRecord, nil
	case "strict":
		return TLSStrict, nil
	case "off":
		return TLSOff, nil
	}
	return 0, fmt.Errorf("%q: want strict, record or off", s)
}

func (v TLSVerify) String() string {
	switch v {
	case TLSStrict:
		return "strict"
	case TLSOff:
		return "off"
	}
	return "record"
}

// TLSState is what a response's connection negotiated and what became of
// the server's certificate.
type TLSState struct {
	Version  string // "tls/1.3", as WARC-Protocol writes it
	Cipher   string // the cipher suite's IANA name, e.g. "TLS_AES_128_GCM_SHA256"
	Verified bool   // the certificate chain verified for the host name
	// VerifyError is why it did not ("" when Verified, or with TLSOff,
	// which does not check).
	VerifyError string
	// Resumed reports that the handshake resumed an earlier session with
	// the host (a ticket from the session cache) instead of a full one.
	Resumed bool
}

// Outcome is the verification outcome in one line: "verified", "off" or
// "failed: " and the error.
func (s *TLSState) Outcome() string {
	switch {
	case s.Verified:
		return "verified"
	case s.VerifyError == "":
		return "off"
	}
	return "failed: " + s.VerifyError
}

// tlsVersions names the TLS versions as WARC-Protocol does.
var tlsVersions = map[uint16]string{
	tls.VersionTLS10: "tls/1.0", tls.VersionTLS11: "tls/1.1",
	tls.VersionTLS12: "tls/1.2", tls.VersionTLS13: "tls/1.3",
}

// tlsState describes the connection state cs; verr is the verification
// outcome (nil: verified), checked tells whether it was checked at all.
func tlsState(cs tls.ConnectionState, checked bool, verr error) *TLSState {
	st := &TLSState{Version: tlsVersions[cs.Version], Cipher: tls.CipherSuiteName(cs.CipherSuite), Resumed: cs.DidResume}
	if st.Version == "" {
		st.Version = fmt.Sprintf("tls/0x%04x", cs.Version)
	}
	switch {
	case !checked:
	case verr == nil:
		st.Verified = true
	default:
		st.VerifyError = strings.Join(strings.Fields(verr.Error()), " ")
	}
	return st
}

// verifyPeer verifies the server certificate chain of cs for host against
// roots (nil: the system's), as the handshake would have.
func verifyPeer(cs tls.ConnectionState, roots *x509.CertPool, host string) error {
	certs := cs.PeerCertificates
	if len(certs) == 0 {
		return errors.New("tls: server sent no certificate")
	}
	opts := x509.VerifyOptions{Roots: roots, DNSName: host, Intermediates: x509.NewCertPool()}
	for _, c := range certs[1:] {
		opts.Intermediates.AddCert(c)
	}
	_, err := certs[0].Verify(opts)
	return err
}

// IsCertificateError reports whether err is (or wraps) the failure to
// verify a server's certificate.
func IsCertificateError(err error) bool {
	var certErr *tls.CertificateVerificationError
	var unkAuth x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var invErr x509.CertificateInvalidError
	return errors.As(err, &certErr) || errors.As(err, &unkAuth) || errors.As(err, &hostErr) || errors.As(err, &invErr)
}

// LoadRoots returns the system's trusted roots plus the PEM certificates
// of file (for --ca-file); an empty file name gives nil (the system's).
func LoadRoots(file string) (*x509.CertPool, error) {
	if file == "" {
		return nil, nil
	}
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("ca file: %w", err)
	}
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("ca file %s: no PEM certificate in it", file)
	}
	return pool, nil
}
