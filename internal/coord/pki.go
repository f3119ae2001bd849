package coord

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/netip"
	"os"
	"path/filepath"
	"time"
)

// The coordination traffic (etcd's client and peer connections) is mutual
// TLS under the crawl's own certificate authority. The authority's
// Ed25519 key is derived from the crawl key (its seed is given by the
// caller, derived with a purpose label of its own), so every holder of
// the key can issue certificates and nobody else can: an agent started
// with another key presents a certificate no coordinator accepts, and
// accepts no coordinator. Leaf certificates are issued afresh at each
// start, with a random key, for the addresses the holder serves and
// dials from; an external etcd cluster checks those addresses (peer
// connections) as it would under any other authority, and takes the same
// files. An embedded member sees its peers through its front (front.go),
// from 127.0.0.1, which every leaf names: there the key, not the
// address, is what admits a peer, as it is what lets one issue a leaf.

// Authority is a crawl's certificate authority. Its zero value is not
// usable; build one with NewAuthority.
type Authority struct {
	key  ed25519.PrivateKey
	cert *x509.Certificate
	der  []byte
}

// NewAuthority derives the crawl's authority from a 32-byte seed.
// The same seed always gives the same authority certificate.
func NewAuthority(seed []byte) (*Authority, error) {
	if len(seed) != ed25519.SeedSize {
		return nil, fmt.Errorf("coord: authority seed of %d bytes, want %d", len(seed), ed25519.SeedSize)
	}
	key := ed25519.NewKeyFromSeed(seed)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "petrel crawl authority"},
		NotBefore:             time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC),
		NotAfter:              time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(zeroReader{}, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &Authority{key: key, cert: cert, der: der}, nil
}

// zeroReader feeds x509.CreateCertificate, which needs no randomness for
// Ed25519 but asks for a reader.
type zeroReader struct{}

func (zeroReader) Read(b []byte) (int, error) { clear(b); return len(b), nil }

// Pool returns a pool holding only the authority's certificate.
func (a *Authority) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(a.cert)
	return p
}

// Issue returns a new leaf certificate, valid for both ends of a
// connection, for name and the given addresses (127.0.0.1 and ::1 are
// always added, so a local client can reach a local member).
func (a *Authority) Issue(name string, addrs []netip.Addr) (tls.Certificate, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: name},
		DNSNames:     []string{"localhost", name},
		NotBefore:    time.Now().Add(-24 * time.Hour),
		NotAfter:     time.Now().Add(20 * 365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	seen := map[netip.Addr]bool{}
	for _, ip := range append([]netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.IPv6Loopback()}, addrs...) {
		if ip.IsValid() && !seen[ip] {
			seen[ip] = true
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip.AsSlice())
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, priv.Public(), a.key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: priv}, nil
}

// ClientTLS returns the configuration of a client of the coordinators:
// TLS 1.3, cert presented, servers verified against the authority.
func (a *Authority) ClientTLS(cert tls.Certificate) *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{cert}, RootCAs: a.Pool()}
}

// Files are the PEM files of one holder: etcd reads its TLS material
// from files, and an external etcd server takes the same three.
type Files struct {
	CA, Cert, Key string
}

// WriteFiles writes the authority's certificate and cert (with its key)
// under dir as ca.pem, NAME.pem and NAME-key.pem, mode 0600.
func (a *Authority) WriteFiles(dir, name string, cert tls.Certificate) (Files, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return Files{}, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	if err != nil {
		return Files{}, err
	}
	f := Files{CA: filepath.Join(dir, "ca.pem"), Cert: filepath.Join(dir, name+".pem"), Key: filepath.Join(dir, name+"-key.pem")}
	for path, block := range map[string]*pem.Block{
		f.CA:   {Type: "CERTIFICATE", Bytes: a.der},
		f.Cert: {Type: "CERTIFICATE", Bytes: cert.Certificate[0]},
		f.Key:  {Type: "PRIVATE KEY", Bytes: keyDER},
	} {
		if err := writePEM(path, block); err != nil {
			return Files{}, err
		}
	}
	return f, nil
}

func writePEM(path string, b *pem.Block) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, pem.EncodeToMemory(b), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
