package fetch

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"errors"
	"io"
	"net/http"
	"testing"

	"github.com/andybalholm/brotli"
)

func compress(t testing.TB, coding string, data []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	var w io.WriteCloser
	switch coding {
	case "gzip":
		w = gzip.NewWriter(&buf)
	case "zlib":
		w = zlib.NewWriter(&buf)
	case "raw-deflate":
		w, _ = flate.NewWriter(&buf, flate.BestCompression)
	case "br":
		w = brotli.NewWriterLevel(&buf, brotli.BestSpeed)
	default:
		t.Fatalf("unknown coding %q", coding)
	}
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func encodedResponse(header string, body []byte) *Response {
	h := http.Header{}
	if header != "" {
		h.Set("Content-Encoding", header)
	}
	return &Response{Header: h, Body: body}
}

func TestDecodeBody(t *testing.T) {
	page := bytes.Repeat([]byte("<a href=/x>petrel</a>\n"), 200)
	cases := []struct {
		header, coding string
	}{
		{"gzip", "gzip"},
		{"x-gzip", "gzip"},
		{"GZIP", "gzip"},
		{"deflate", "zlib"},
		{"deflate", "raw-deflate"},
		{"br", "br"},
	}
	for _, c := range cases {
		got, err := DecodeBody(encodedResponse(c.header, compress(t, c.coding, page)), 1<<20)
		if err != nil || !bytes.Equal(got, page) {
			t.Errorf("%s (%s): %d bytes, %v; want the page back", c.header, c.coding, len(got), err)
		}
	}
	// Stacked codings are undone last first.
	stacked := compress(t, "br", compress(t, "gzip", page))
	if got, err := DecodeBody(encodedResponse("gzip, br", stacked), 1<<20); err != nil || !bytes.Equal(got, page) {
		t.Errorf("stacked gzip, br: %d bytes, %v", len(got), err)
	}
	for _, h := range []string{"", "identity"} {
		if got, err := DecodeBody(encodedResponse(h, page), 1<<20); err != nil || !bytes.Equal(got, page) {
			t.Errorf("%q: %d bytes, %v", h, len(got), err)
		}
	}
	if got, err := DecodeBody(encodedResponse("", page), 10); !errors.Is(err, ErrDecodedTooLarge) || !bytes.Equal(got, page[:10]) {
		t.Errorf("identity over cap: %q, %v", got, err)
	}
	if _, err := DecodeBody(encodedResponse("compress", page), 1<<20); !errors.Is(err, ErrUnsupportedEncoding) {
		t.Errorf("compress: %v, want ErrUnsupportedEncoding", err)
	}
	// A body cut short decodes as far as it goes, with an error.
	gz := compress(t, "gzip", bytes.Repeat([]byte("abcdefghij"), 10000))
	got, err := DecodeBody(encodedResponse("gzip", gz[:len(gz)/2]), 1<<20)
	if err == nil || len(got) == 0 {
		t.Errorf("truncated gzip: %d bytes, %v; want a prefix and an error", len(got), err)
	}
	if _, err := DecodeBody(encodedResponse("gzip", []byte("not gzip at all")), 1<<20); err == nil {
		t.Error("garbage gzip decoded without error")
	}
}

func TestDecodeBodyBombs(t *testing.T) {
	const max = 256 << 10
	zeros := make([]byte, 8<<20)
	for _, c := range []struct{ header, coding string }{
		{"gzip", "gzip"},
		{"deflate", "zlib"},
		{"deflate", "raw-deflate"},
		{"br", "br"},
	} {
		bomb := compress(t, c.coding, zeros)
		if len(bomb) > 64<<10 {
			t.Fatalf("%s bomb is %d bytes: not a bomb", c.coding, len(bomb))
		}
		got, err := DecodeBody(encodedResponse(c.header, bomb), max)
		if !errors.Is(err, ErrDecodedTooLarge) {
			t.Errorf("%s bomb: %v, want ErrDecodedTooLarge", c.coding, err)
		}
		if len(got) != max || !bytes.Equal(got, zeros[:max]) {
			t.Errorf("%s bomb: %d bytes returned, want the first %d", c.coding, len(got), max)
		}
	}
}

func BenchmarkDecodeGzip20KiB(b *testing.B) {
	page := bytes.Repeat([]byte("<p>petrel bench</p>\n"), 1024)
	resp := encodedResponse("gzip", compress(b, "gzip", page))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeBody(resp, 1<<20); err != nil {
			b.Fatal(err)
		}
	}
}
