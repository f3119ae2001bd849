package cluster

import (
	"bytes"
	"crypto/ed25519"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"math/big"
	"time"
)

// The exchange's TLS: every agent presents the same self-signed
// certificate, whose Ed25519 key is derived from the cluster key, and
// accepts a peer (client or server) only if it presents a certificate for
// that same public key. TLS 1.3 only; the certificate's names and dates are
// not checked (the key is the identity), so no PKI is needed and no clock
// skew can break a crawl.

// tlsCert builds the crawl's certificate from k.
func tlsCert(k Key) (tls.Certificate, error) {
	priv := k.identity()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "petrel cluster " + k.Fingerprint()},
		DNSNames:     []string{"petrel-cluster"},
		NotBefore:    time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC),
		NotAfter:     time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(zeroReader{}, tmpl, tmpl, priv.Public(), priv)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: priv}, nil
}

// zeroReader feeds x509.CreateCertificate, which needs no randomness for
// Ed25519 but asks for a reader.
type zeroReader struct{}

func (zeroReader) Read(b []byte) (int, error) { clear(b); return len(b), nil }

var errWrongKey = errors.New("cluster: peer does not hold the crawl's cluster key")

// verifyPeer accepts exactly a chain whose leaf carries pub.
func verifyPeer(pub ed25519.PublicKey) func([][]byte, [][]*x509.Certificate) error {
	return func(raw [][]byte, _ [][]*x509.Certificate) error {
		if len(raw) == 0 {
			return errWrongKey
		}
		c, err := x509.ParseCertificate(raw[0])
		if err != nil {
			return errWrongKey
		}
		p, ok := c.PublicKey.(ed25519.PublicKey)
		if !ok || !bytes.Equal(p, pub) {
			return errWrongKey
		}
		return nil
	}
}

// exchangeTLS is the configuration both ends of the exchange share:
// mutual TLS 1.3, HTTP/2, the crawl's certificate, the peer's key checked.
func exchangeTLS(k Key) (*tls.Config, error) {
	cert, err := tlsCert(k)
	if err != nil {
		return nil, err
	}
	return &tls.Config{
		MinVersion:            tls.VersionTLS13,
		Certificates:          []tls.Certificate{cert},
		VerifyPeerCertificate: verifyPeer(k.identity().Public().(ed25519.PublicKey)),
		NextProtos:            []string{"h2"},
	}, nil
}

// serverTLS is the exchange server's configuration.
func serverTLS(k Key) (*tls.Config, error) {
	c, err := exchangeTLS(k)
	if err == nil {
		c.ClientAuth = tls.RequireAnyClientCert
	}
	return c, err
}

// clientTLS is the exchange client's configuration.
func clientTLS(k Key) (*tls.Config, error) {
	c, err := exchangeTLS(k)
	if err == nil {
		c.InsecureSkipVerify = true // verifyPeer checks the key instead of a PKI chain
	}
	return c, err
}
