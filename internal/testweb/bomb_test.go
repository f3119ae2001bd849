package testweb

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"io"
	"testing"

	"github.com/andybalholm/brotli"
)

// TestBombsDecode checks that each bomb decodes, through the standard
// readers (gzip's multi-member stream, zlib's Adler-32 check at its end),
// to exactly Config.BombBytes rounded up to a whole unit, all zeros.
func TestBombsDecode(t *testing.T) {
	for _, size := range []int64{1, bombUnit, 2*bombUnit + 1} {
		w := &Web{cfg: Config{BombBytes: size}}
		w.buildBombs()
		want := (size + bombUnit - 1) / bombUnit * bombUnit
		for _, c := range []struct {
			name string
			body []byte
			dec  func(io.Reader) (io.Reader, error)
		}{
			{"gzip", w.bombs.gzip, func(r io.Reader) (io.Reader, error) { return gzip.NewReader(r) }},
			{"zlib", w.bombs.zlib, func(r io.Reader) (io.Reader, error) { return zlib.NewReader(r) }},
			{"brotli", w.bombs.br, func(r io.Reader) (io.Reader, error) { return brotli.NewReader(r), nil }},
		} {
			r, err := c.dec(bytes.NewReader(c.body))
			if err != nil {
				t.Fatalf("%s bomb of %d: %v", c.name, size, err)
			}
			b, err := io.ReadAll(io.LimitReader(r, want+1))
			if err != nil || int64(len(b)) != want || !bytes.Equal(b, make([]byte, want)) {
				t.Errorf("%s bomb of %d: %d bytes (%v), want %d zeros", c.name, size, len(b), err, want)
			}
			if int64(len(c.body))*100 > want {
				t.Errorf("%s bomb of %d: %d bytes for %d: not a bomb", c.name, size, len(c.body), want)
			}
		}
	}
}
