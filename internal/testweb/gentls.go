package testweb

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"sync"
	"time"
)

// webCA is the certificate authority of a real-shaped web: it signs, on
// the first handshake for a host, a certificate naming the host and (for
// a www host) its bare name, and keeps at most maxCerts of them. Safe for
// concurrent use.
type webCA struct {
	gen     *Gen
	cert    *x509.Certificate
	key     *ecdsa.PrivateKey
	leafKey *ecdsa.PrivateKey // shared by every host's certificate
	pem     []byte

	mu    sync.Mutex
	certs map[int]*tls.Certificate // by host; emptied when full
}

// maxCerts bounds the certificates a webCA keeps.
const maxCerts = 1 << 14

func newWebCA(g *Gen) (*webCA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	leafKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "Petrel generated web CA", Organization: []string{"Petrel test web"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(30 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &webCA{gen: g, cert: cert, key: key, leafKey: leafKey, certs: make(map[int]*tls.Certificate),
		pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}, nil
}

// certFor returns the certificate of the host named in hello (its name or
// bare name).
func (ca *webCA) certFor(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	h, _, err := ca.gen.resolve(hostOnly(hello.ServerName))
	if err != nil {
		return nil, fmt.Errorf("testweb: no certificate for %q", hello.ServerName)
	}
	ca.mu.Lock()
	c := ca.certs[h]
	ca.mu.Unlock()
	if c != nil {
		return c, nil
	}
	if c, err = ca.sign(h); err != nil {
		return nil, err
	}
	ca.mu.Lock()
	if len(ca.certs) >= maxCerts {
		clear(ca.certs)
	}
	ca.certs[h] = c
	ca.mu.Unlock()
	return c, nil
}

// sign makes the certificate of host h.
func (ca *webCA) sign(h int) (*tls.Certificate, error) {
	name := ca.gen.Name(h)
	names := []string{name}
	if b := bareName(name); b != "" {
		names = append(names, b)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(int64(h) + 2),
		Subject:      pkix.Name{CommonName: name},
		DNSNames:     names,
		NotBefore:    ca.cert.NotBefore,
		NotAfter:     ca.cert.NotAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &ca.leafKey.PublicKey, ca.key)
	if err != nil {
		return nil, err
	}
	return &tls.Certificate{Certificate: [][]byte{der, ca.cert.Raw}, PrivateKey: ca.leafKey}, nil
}

// serverConfig returns the TLS configuration of the web's HTTPS
// listeners: per host (by SNI) TLS 1.3 or at most 1.2, with or without
// "h2" in ALPN; session tickets on (Go's server issues them, its keys
// rotated as Go rotates them).
func (ca *webCA) serverConfig() *tls.Config {
	var variants [2][2]*tls.Config // [tls12][h2]
	for i := range 2 {
		for j := range 2 {
			c := &tls.Config{MinVersion: tls.VersionTLS12, MaxVersion: tls.VersionTLS13, GetCertificate: ca.certFor,
				NextProtos: []string{"http/1.1"}}
			if i == 1 {
				c.MaxVersion = tls.VersionTLS12
			}
			if j == 1 {
				c.NextProtos = []string{"h2", "http/1.1"}
			}
			variants[i][j] = c
		}
	}
	base := &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: ca.certFor}
	base.GetConfigForClient = func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
		h, _, err := ca.gen.resolve(hostOnly(hello.ServerName))
		if err != nil {
			return nil, errors.New("testweb: TLS: no such host")
		}
		t := ca.gen.traits(h)
		return variants[b2i(t.tls12)][b2i(t.h2)], nil
	}
	return base
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
