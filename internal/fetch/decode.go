package fetch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zlib"
)

// ErrDecodedTooLarge is returned (wrapped) by [DecodeBody] when the decoded
// body exceeds its cap; the first max decoded bytes are returned with it.
var ErrDecodedTooLarge = errors.New("decoded body exceeds the limit")

// ErrUnsupportedEncoding is returned (wrapped) by [DecodeBody] for a
// Content-Encoding it cannot undo.
var ErrUnsupportedEncoding = errors.New("unsupported content-encoding")

// maxEncodingLayers bounds how many stacked content-codings are undone.
const maxEncodingLayers = 4

// DecodeBody returns resp.Body with its Content-Encoding undone (gzip,
// x-gzip, deflate as zlib or raw, br, identity; stacked codings are undone
// last first), at most max bytes of it. If the decoded body is longer, the
// first max bytes are returned with an error wrapping [ErrDecodedTooLarge],
// so compression bombs cost at most max bytes. A corrupt or cut-short
// stream returns what was decoded before the damage, with an error.
// Without a Content-Encoding the body is returned as is (capped at max).
func DecodeBody(resp *Response, max int64) ([]byte, error) {
	if max < 0 {
		max = 0
	}
	var codings []string
	for _, v := range resp.Header.Values("Content-Encoding") {
		for _, c := range strings.Split(v, ",") {
			c = strings.ToLower(strings.TrimSpace(c))
			if c != "" && c != "identity" {
				codings = append(codings, c)
			}
		}
	}
	if len(codings) == 0 {
		if int64(len(resp.Body)) > max {
			return resp.Body[:max], fmt.Errorf("fetch: decode body: %d bytes: %w", len(resp.Body), ErrDecodedTooLarge)
		}
		return resp.Body, nil
	}
	if len(codings) > maxEncodingLayers {
		return nil, fmt.Errorf("fetch: decode body: %d stacked codings: %w", len(codings), ErrUnsupportedEncoding)
	}
	var d *decoders
	if resp.f != nil {
		d = &resp.f.decoders
	}
	var r io.Reader = bytes.NewReader(resp.Body)
	for i := len(codings) - 1; i >= 0; i-- {
		dr, done, err := d.open(codings[i], r)
		if err != nil {
			return nil, fmt.Errorf("fetch: decode body (%s): %w", codings[i], err)
		}
		defer done()
		r = dr
	}
	var out bytes.Buffer
	out.Grow(int(min(decodedSize(codings, resp.Body), max)) + 1)
	_, err := io.Copy(&out, io.LimitReader(r, max+1))
	b := out.Bytes()
	if int64(len(b)) > max {
		return b[:max], fmt.Errorf("fetch: decode body (%s): more than %d bytes: %w", strings.Join(codings, ", "), max, ErrDecodedTooLarge)
	}
	if err != nil {
		return b, fmt.Errorf("fetch: decode body (%s): %w", strings.Join(codings, ", "), err)
	}
	return b, nil
}

// decodedSize guesses the decoded size of body, encoded by codings, to
// size the output once: a lone gzip member's trailer states it (ISIZE,
// the size modulo 2^32, which a server may get wrong: it is only a hint),
// otherwise four times the encoded size. The caller caps it.
func decodedSize(codings []string, body []byte) int64 {
	if len(codings) == 1 && (codings[0] == "gzip" || codings[0] == "x-gzip") && len(body) >= 18 {
		return int64(binary.LittleEndian.Uint32(body[len(body)-4:]))
	}
	return int64(len(body)) * 4
}

// decoders keeps decompressors for reuse, a pool of each kind (their
// windows and tables are most of what decoding a page allocates). A
// Fetcher has one; a nil *decoders makes a new decompressor each time.
type decoders struct {
	gzip, zlib, flate, brotli sync.Pool
}

// get returns a decompressor from pool (nil when empty or d is nil).
func (d *decoders) get(pool func(*decoders) *sync.Pool) any {
	if d == nil {
		return nil
	}
	return pool(d).Get()
}

// putter returns the function that gives x back to its pool.
func (d *decoders) putter(pool func(*decoders) *sync.Pool, x any) func() {
	if d == nil {
		return func() {}
	}
	return func() { pool(d).Put(x) }
}

func gzipPool(d *decoders) *sync.Pool   { return &d.gzip }
func zlibPool(d *decoders) *sync.Pool   { return &d.zlib }
func flatePool(d *decoders) *sync.Pool  { return &d.flate }
func brotliPool(d *decoders) *sync.Pool { return &d.brotli }

// open returns a decompressor of coding reading r and the function to
// call when done with it.
func (d *decoders) open(coding string, r io.Reader) (io.Reader, func(), error) {
	switch coding {
	case "gzip", "x-gzip":
		zr, _ := d.get(gzipPool).(*gzip.Reader)
		var err error
		if zr != nil {
			err = zr.Reset(r)
		} else if zr, err = gzip.NewReader(r); err != nil {
			return nil, nil, err
		}
		if err != nil {
			d.putter(gzipPool, zr)()
			return nil, nil, err
		}
		return zr, d.putter(gzipPool, zr), nil
	case "deflate", "x-deflate":
		// "deflate" is meant to be zlib-wrapped (RFC 9110), but many
		// servers send raw DEFLATE: look at the zlib header to decide.
		br := bufioPeeker{r: r}
		hdr := br.peek(2)
		if len(hdr) == 2 && hdr[0]&0x0F == 8 && (uint16(hdr[0])<<8|uint16(hdr[1]))%31 == 0 {
			return d.openZlib(br.reader())
		}
		fr, _ := d.get(flatePool).(io.ReadCloser)
		if fr != nil {
			fr.(flate.Resetter).Reset(br.reader(), nil)
		} else {
			fr = flate.NewReader(br.reader())
		}
		return fr, d.putter(flatePool, fr), nil
	case "br":
		bd, _ := d.get(brotliPool).(*brotli.Reader)
		if bd != nil {
			bd.Reset(r)
		} else {
			bd = brotli.NewReader(r)
		}
		return bd, d.putter(brotliPool, bd), nil
	}
	return nil, nil, ErrUnsupportedEncoding
}

func (d *decoders) openZlib(r io.Reader) (io.Reader, func(), error) {
	zr, _ := d.get(zlibPool).(io.ReadCloser)
	var err error
	if zr != nil {
		err = zr.(zlib.Resetter).Reset(r, nil)
	} else if zr, err = zlib.NewReader(r); err != nil {
		return nil, nil, err
	}
	if err != nil {
		d.putter(zlibPool, zr)()
		return nil, nil, err
	}
	return zr, d.putter(zlibPool, zr), nil
}

// bufioPeeker peeks at the first bytes of a reader without losing them.
type bufioPeeker struct {
	r    io.Reader
	head []byte
}

func (p *bufioPeeker) peek(n int) []byte {
	buf := make([]byte, n)
	m, _ := io.ReadFull(p.r, buf)
	p.head = buf[:m]
	return p.head
}

func (p *bufioPeeker) reader() io.Reader {
	return io.MultiReader(bytes.NewReader(p.head), p.r)
}
