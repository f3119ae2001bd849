package physlimit

import (
	"bytes"
	stdgzip "compress/gzip"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/gzip"

	"github.com/petrel-crawler/petrel/internal/parse"
	"github.com/petrel-crawler/petrel/internal/urlx"
)

// recordBytes is the most plaintext a TLS record carries.
const recordBytes = 16 << 10

// readBytes is the buffer of one read from a socket.
const readBytes = 32 << 10

// server is a TLS (or plain TCP) server on loopback, as the real-shaped web
// serves: an ECDSA P-256 certificate signed by an ECDSA P-256 authority,
// both sent; session tickets on. Each connection gets, after the handshake,
// one byte (so that a TLS 1.3 client reads its ticket) or, when stream is
// set, bytes until the client closes.
type server struct {
	ln     net.Listener
	roots  *x509.CertPool
	name   string
	stream bool
	wg     sync.WaitGroup
}

// newServer starts a server; cfg nil serves plain TCP. It stops at the
// test's end.
func newServer(tb testing.TB, cfg func(*tls.Config), stream bool) *server {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	s := &server{ln: ln, name: "www.example-0.test", stream: stream}
	var scfg *tls.Config
	if cfg != nil {
		var cert tls.Certificate
		cert, s.roots = makeCert(tb, s.name)
		scfg = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
		cfg(scfg)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.wg.Go(func() { s.accept(ctx, scfg) })
	tb.Cleanup(func() {
		cancel()
		ln.Close()
		s.wg.Wait()
	})
	return s
}

func (s *server) accept(ctx context.Context, cfg *tls.Config) {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.wg.Go(func() {
			stop := context.AfterFunc(ctx, func() { c.Close() })
			defer stop()
			defer c.Close()
			if cfg != nil {
				tc := tls.Server(c, cfg)
				if tc.HandshakeContext(ctx) != nil {
					return
				}
				c = tc
			}
			s.serve(c)
		})
	}
}

// serve writes to c: one byte, or a stream of incompressible bytes, then
// waits for the client to close.
func (s *server) serve(c net.Conn) {
	if !s.stream {
		if _, err := c.Write([]byte{'x'}); err == nil {
			io.Copy(io.Discard, c)
		}
		return
	}
	buf := make([]byte, readBytes)
	rand.Read(buf)
	for {
		if _, err := c.Write(buf); err != nil {
			return
		}
	}
}

// makeCert returns a certificate for name, with its authority in the chain,
// and a pool holding that authority.
func makeCert(tb testing.TB, name string) (tls.Certificate, *x509.CertPool) {
	tb.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	leafKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "physlimit CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true, IsCA: true, MaxPathLenZero: true}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		tb.Fatal(err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		tb.Fatal(err)
	}
	leafTmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: name}, DNSNames: []string{name},
		NotBefore: ca.NotBefore, NotAfter: ca.NotAfter, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, ca, &leafKey.PublicKey, caKey)
	if err != nil {
		tb.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	return tls.Certificate{Certificate: [][]byte{leafDER, caDER}, PrivateKey: leafKey}, roots
}

// dial opens a connection to s, with TLS when cfg is not nil; it returns
// whether the handshake resumed a session.
func (s *server) dial(cfg *tls.Config) (net.Conn, bool, error) {
	c, err := net.Dial("tcp", s.ln.Addr().String())
	if err != nil || cfg == nil {
		return c, false, err
	}
	tc := tls.Client(c, cfg)
	if err := tc.Handshake(); err != nil {
		c.Close()
		return nil, false, err
	}
	return tc, tc.ConnectionState().DidResume, nil
}

// BenchmarkConnect measures the client's CPU to open a connection,
// read one byte and close it: TCP alone, then with a TLS handshake in full
// or resumed from a ticket, TLS 1.3 (X25519 alone, the least a client
// offers, or Go's default key shares, X25519MLKEM768 first) and TLS 1.2.
func BenchmarkConnect(b *testing.B) {
	tls12 := func(c *tls.Config) { c.MaxVersion = tls.VersionTLS12 }
	tls13 := func(c *tls.Config) {}
	x25519 := []tls.CurveID{tls.X25519}
	for _, tc := range []struct {
		name    string
		server  func(*tls.Config)
		curves  []tls.CurveID
		resumed bool
	}{
		{"tcp", nil, nil, false},
		{"tls13-x25519-full", tls13, x25519, false},
		{"tls13-x25519-resumed", tls13, x25519, true},
		{"tls13-default-full", tls13, nil, false},
		{"tls13-default-resumed", tls13, nil, true},
		{"tls12-full", tls12, x25519, false},
		{"tls12-resumed", tls12, x25519, true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			s := newServer(b, tc.server, false)
			var cfg *tls.Config
			if tc.server != nil {
				cfg = &tls.Config{RootCAs: s.roots, ServerName: s.name, CurvePreferences: tc.curves}
				if tc.resumed {
					cfg.ClientSessionCache = tls.NewLRUClientSessionCache(1)
					if err := s.roundTrip(cfg, false); err != nil { // the ticket
						b.Fatal(err)
					}
				}
			}
			m := startCPU(b)
			for b.Loop() {
				if err := s.roundTrip(cfg, tc.resumed); err != nil {
					b.Fatal(err)
				}
			}
			m.stop(0)
		})
	}
}

// roundTrip connects, reads the server's byte and closes; it fails when
// the handshake's resumption is not as wanted.
func (s *server) roundTrip(cfg *tls.Config, resumed bool) error {
	c, did, err := s.dial(cfg)
	if err != nil {
		return err
	}
	defer c.Close()
	if did != resumed {
		return errors.New("handshake resumption not as wanted")
	}
	var one [1]byte
	_, err = io.ReadFull(c, one[:])
	return err
}

// BenchmarkRead measures the client's CPU per KiB read from a loopback
// connection in reads of up to 32 KiB: plain TCP (the read system calls
// alone), and TLS records (16 KiB) decrypted with AES-128-GCM (TLS 1.3)
// or ChaCha20-Poly1305 (TLS 1.2).
func BenchmarkRead(b *testing.B) {
	for _, tc := range []struct {
		name   string
		server func(*tls.Config)
	}{
		{"tcp", nil},
		{"tls13-aes128gcm", func(c *tls.Config) {}},
		{"tls12-chacha20poly1305", func(c *tls.Config) {
			c.MaxVersion = tls.VersionTLS12
			c.CipherSuites = []uint16{tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256}
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			s := newServer(b, tc.server, true)
			var cfg *tls.Config
			if tc.server != nil {
				cfg = &tls.Config{RootCAs: s.roots, ServerName: s.name}
			}
			c, _, err := s.dial(cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			buf := make([]byte, readBytes)
			var n int64
			m := startCPU(b)
			for b.Loop() {
				k, err := c.Read(buf)
				if err != nil {
					b.Fatal(err)
				}
				n += int64(k)
			}
			m.stop(n)
			b.ReportMetric(float64(n)/float64(b.N), "B/read")
		})
	}
}

// BenchmarkAESGCM measures AES-128-GCM's opening of full TLS records, per
// KiB of plaintext.
func BenchmarkAESGCM(b *testing.B) {
	block, err := aes.NewCipher(make([]byte, 16))
	if err != nil {
		b.Fatal(err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		b.Fatal(err)
	}
	nonce := make([]byte, aead.NonceSize())
	plain := make([]byte, recordBytes)
	rand.Read(plain)
	sealed := aead.Seal(nil, nonce, plain, nil)
	dst := make([]byte, 0, recordBytes)
	m := startCPU(b)
	for b.Loop() {
		if _, err := aead.Open(dst[:0], nonce, sealed, nil); err != nil {
			b.Fatal(err)
		}
	}
	m.stop(int64(b.N) * recordBytes)
}

// decoder decodes one encoded page into dst.
type decoder func(dst, src []byte) error

// BenchmarkDecompress measures decoding the sample's pages as the web
// encodes them, per KiB of HTML: gzip with klauspost/compress (Petrel's
// inflater) and with Go's compress/gzip, brotli with andybalholm/brotli.
// Readers are reset, not made, for each page.
func BenchmarkDecompress(b *testing.B) {
	s := pages(b)
	kz, sz := new(gzip.Reader), new(stdgzip.Reader)
	br := brotli.NewReader(nil)
	var src bytes.Reader
	for _, tc := range []struct {
		name   string
		brotli bool
		decode decoder
	}{
		{"gzip-klauspost", false, func(dst, p []byte) error {
			src.Reset(p)
			if err := kz.Reset(&src); err != nil {
				return err
			}
			return readFull(kz, dst)
		}},
		{"gzip-std", false, func(dst, p []byte) error {
			src.Reset(p)
			if err := sz.Reset(&src); err != nil {
				return err
			}
			return readFull(sz, dst)
		}},
		{"brotli", true, func(dst, p []byte) error {
			src.Reset(p)
			if err := br.Reset(&src); err != nil {
				return err
			}
			return readFull(br, dst)
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			dst := make([]byte, maxHTML(s))
			loopPages(b, s, func(p *page) int {
				enc := p.gz
				if tc.brotli {
					enc = p.br
				}
				if err := tc.decode(dst[:len(p.html)], enc); err != nil {
					b.Fatal(err)
				}
				return len(p.html)
			})
		})
	}
}

// loopPages runs do on the sample's pages in turn, one per op, and
// reports the CPU per op and per KiB of the bytes do says it consumed.
func loopPages(b *testing.B, s *sample, do func(p *page) int) {
	var n int64
	i := 0
	m := startCPU(b)
	for b.Loop() {
		n += int64(do(&s.pages[i%len(s.pages)]))
		i++
	}
	m.stop(n)
}

// readFull reads exactly len(dst) bytes from r and checks that r ends there.
func readFull(r io.Reader, dst []byte) error {
	if _, err := io.ReadFull(r, dst); err != nil {
		return err
	}
	var one [1]byte
	if k, _ := r.Read(one[:]); k != 0 {
		return errors.New("decoded page longer than its HTML")
	}
	return nil
}

func maxHTML(s *sample) int {
	n := 0
	for _, p := range s.pages {
		n = max(n, len(p.html))
	}
	return n
}

// BenchmarkDigest measures the WARC digests over the pages as transferred
// (gzip-encoded), per KiB: SHA-1 (WARC-Payload-Digest, WARC-Block-Digest)
// and SHA-256.
func BenchmarkDigest(b *testing.B) {
	s := pages(b)
	for _, tc := range []struct {
		name string
		sum  func([]byte) byte
	}{
		{"sha1", func(p []byte) byte { d := sha1.Sum(p); return d[0] }},
		{"sha256", func(p []byte) byte { d := sha256.Sum256(p); return d[0] }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var x byte
			loopPages(b, s, func(p *page) int {
				x ^= tc.sum(p.gz)
				return len(p.gz)
			})
			b.Logf("digest bytes xor %d", x)
		})
	}
}

// recordHead is the text a WARC response record holds before the body:
// the WARC header and the HTTP response header, as a crawler writes them.
const recordHead = "WARC/1.1\r\nWARC-Type: response\r\nWARC-Record-ID: <urn:uuid:3f0c7e52-5b0e-4f43-9d0a-7c1f2b8e4a61>\r\n" +
	"WARC-Date: 2026-12-07T06:46:48.123456Z\r\nWARC-Target-URI: https://www.nejavigazecle-28.test/articles/rofuze/2\r\n" +
	"WARC-IP-Address: 127.97.0.12\r\nWARC-Concurrent-To: <urn:uuid:9b1e4f0a-6c2d-4e8f-a1b3-5d7c9e0f2a4b>\r\n" +
	"WARC-Block-Digest: sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ\r\nWARC-Payload-Digest: sha1:LQ3A4FJ7B2K5ZP6WQXG4Y3VDBMTN2HCE\r\n" +
	"Content-Type: application/http;msgtype=response\r\nContent-Length: 41234\r\n\r\n" +
	"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 40987\r\nContent-Type: text/html; charset=utf-8\r\n" +
	"Date: Mon, 07 Dec 2026 06:46:48 GMT\r\nVary: Accept-Encoding\r\n\r\n"

// BenchmarkWARCGzip measures gzip at level 1 (klauspost/compress, the
// level of Petrel's WARC writer) per KiB of input: of the pages as
// transferred (gzip-encoded, as a WARC response record holds them) alone,
// of the same after a record's head in the same member (the head's text
// gives the encoder matches, and it then emits the whole body as literals
// instead of storing it: what a writer that deflates whole records pays;
// Petrel's stores such bodies, see internal/store's member.go), and of the
// HTML.
func BenchmarkWARCGzip(b *testing.B) {
	s := pages(b)
	for _, tc := range []struct {
		name       string
		head, html bool
	}{{"wire", false, false}, {"record", true, false}, {"html", false, true}} {
		b.Run(tc.name, func(b *testing.B) {
			zw, err := gzip.NewWriterLevel(io.Discard, gzip.BestSpeed)
			if err != nil {
				b.Fatal(err)
			}
			loopPages(b, s, func(p *page) int {
				in := p.gz
				if tc.html {
					in = p.html
				}
				zw.Reset(io.Discard)
				if tc.head {
					io.WriteString(zw, recordHead)
				}
				zw.Write(in)
				if err := zw.Close(); err != nil {
					b.Fatal(err)
				}
				return len(in)
			})
		})
	}
}

// scanTags counts the '<' of p: the least pass a tokenizer makes over HTML.
func scanTags(p []byte) int {
	n := 0
	for {
		i := bytes.IndexByte(p, '<')
		if i < 0 {
			return n
		}
		n++
		p = p[i+1:]
	}
}

// BenchmarkScan measures the scan of the sample's HTML for '<', per KiB.
func BenchmarkScan(b *testing.B) {
	s := pages(b)
	var tags, n int64
	loopPages(b, s, func(p *page) int {
		tags += int64(scanTags(p.html))
		n += int64(len(p.html))
		return len(p.html)
	})
	if tags == 0 {
		b.Fatal("no '<' in the pages")
	}
	b.ReportMetric(float64(tags)/(float64(n)/1024), "tags/KB")
}

// BenchmarkPage takes the sample's pages, one per op, through every
// per-byte step a crawler cannot skip: on nine pages in ten (HTTPS) the
// opening of its TLS records (AES-128-GCM), its decoding (brotli on two
// pages in five, gzip on the others: the shape's shares), one SHA-1 of the
// bytes as transferred, the '<' scan of the HTML, and gzip level 1 of the
// bytes as transferred for the WARC. Handshakes and reads are not in it
// (see BenchmarkConnect, BenchmarkRead). cpu-ns/KB is per KiB of HTML.
func BenchmarkPage(b *testing.B) {
	s := pages(b)
	block, _ := aes.NewCipher(make([]byte, 16))
	aead, _ := cipher.NewGCM(block)
	nonce := make([]byte, aead.NonceSize())
	type wire struct{ enc, sealed [][]byte }
	wires := make([]wire, len(s.pages))
	for i, p := range s.pages {
		enc := p.gz
		if i%5 < 2 {
			enc = p.br
		}
		w := wire{enc: [][]byte{enc}}
		for r := enc; len(r) > 0; {
			k := min(len(r), recordBytes)
			w.sealed = append(w.sealed, aead.Seal(nil, nonce, r[:k], nil))
			r = r[k:]
		}
		wires[i] = w
	}
	kz := new(gzip.Reader)
	br := brotli.NewReader(nil)
	zw, _ := gzip.NewWriterLevel(io.Discard, gzip.BestSpeed)
	plain := make([]byte, recordBytes)
	dst := make([]byte, maxHTML(s))
	var src bytes.Reader
	var n, wireN int64
	i := 0
	m := startCPU(b)
	for b.Loop() {
		k := i % len(s.pages)
		i++
		p, w := &s.pages[k], &wires[k]
		enc := w.enc[0]
		if k%10 != 0 {
			for _, rec := range w.sealed {
				if _, err := aead.Open(plain[:0], nonce, rec, nil); err != nil {
					b.Fatal(err)
				}
			}
		}
		src.Reset(enc)
		var r io.Reader = br
		if k%5 < 2 {
			br.Reset(&src)
		} else {
			kz.Reset(&src)
			r = kz
		}
		out := dst[:len(p.html)]
		if _, err := io.ReadFull(r, out); err != nil {
			b.Fatal(err)
		}
		sha1.Sum(enc)
		if scanTags(out) == 0 {
			b.Fatal("no '<' in a page")
		}
		zw.Reset(io.Discard)
		zw.Write(enc)
		zw.Close()
		n += int64(len(p.html))
		wireN += int64(len(enc))
	}
	m.stop(n)
	b.ReportMetric(float64(n)/float64(b.N), "html-B/op")
	b.ReportMetric(float64(wireN)/float64(b.N), "wire-B/op")
}

// BenchmarkPetrelParse is not a floor: it is Petrel's own pass over the
// sample's HTML (internal/parse, links, requisites and script literals on,
// as a crawl with its defaults parses), per KiB, to set beside
// BenchmarkScan's floor of parsing.
func BenchmarkPetrelParse(b *testing.B) {
	s := pages(b)
	base, err := urlx.Parse("https://www.example-0.test/articles/page")
	if err != nil {
		b.Fatal(err)
	}
	header := http.Header{"Content-Type": {"text/html; charset=utf-8"}}
	opts := parse.Options{MaxLinks: 5000, Embeds: true, JSLiterals: true}
	var links int64
	loopPages(b, s, func(p *page) int {
		links += int64(len(parse.HTML(base, header, p.html, opts).Links))
		return len(p.html)
	})
	if links == 0 {
		b.Fatal("no links parsed from the pages")
	}
}
