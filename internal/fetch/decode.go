package fetch

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/andybalholm/brotli"
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
	var r io.Reader = bytes.NewReader(resp.Body)
	for i := len(codings) - 1; i >= 0; i-- {
		dr, err := decoder(codings[i], r)
		if err != nil {
			return nil, fmt.Errorf("fetch: decode body (%s): %w", codings[i], err)
		}
		r = dr
	}
	var out bytes.Buffer
	grow := int64(len(resp.Body)) * 4
	if grow > max {
		grow = max
	}
	out.Grow(int(grow) + 1)
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

func decoder(coding string, r io.Reader) (io.Reader, error) {
	switch coding {
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(r)
		if err != nil {
			return nil, err
		}
		return zr, nil
	case "deflate", "x-deflate":
		// "deflate" is meant to be zlib-wrapped (RFC 9110), but many
		// servers send raw DEFLATE: look at the zlib header to decide.
		br := bufioPeeker{r: r}
		hdr := br.peek(2)
		if len(hdr) == 2 && hdr[0]&0x0F == 8 && (uint16(hdr[0])<<8|uint16(hdr[1]))%31 == 0 {
			return zlib.NewReader(br.reader())
		}
		return flate.NewReader(br.reader()), nil
	case "br":
		return brotli.NewReader(r), nil
	}
	return nil, ErrUnsupportedEncoding
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
