package fetch

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"errors"
	"io"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/andybalholm/brotli"

	"github.com/petrel-crawler/petrel/internal/testweb"
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

// TestDecodeBodyPooled: the responses of a Fetcher decode through its
// pooled decompressors, and one left mid-stream by a bomb or by a corrupt
// or cut-short body decodes the next body whole.
func TestDecodeBodyPooled(t *testing.T) {
	f := New(Options{})
	page := bytes.Repeat([]byte("<a href=/x>petrel</a>\n"), 2000)
	zeros := make([]byte, 4<<20)
	for _, c := range []struct{ header, coding string }{
		{"gzip", "gzip"}, {"deflate", "zlib"}, {"deflate", "raw-deflate"}, {"br", "br"},
	} {
		good, bomb := compress(t, c.coding, page), compress(t, c.coding, zeros)
		for i, body := range [][]byte{good, bomb, good, good[:len(good)/2], good, []byte("\x1f\x8b garbage"), good} {
			resp := encodedResponse(c.header, body)
			resp.f = f
			got, err := DecodeBody(resp, 64<<10)
			switch {
			case len(body) == len(good) && &body[0] == &good[0]:
				if err != nil || !bytes.Equal(got, page) {
					t.Errorf("%s (%s) body %d: %d bytes, %v; want the page", c.header, c.coding, i, len(got), err)
				}
			case &body[0] == &bomb[0]:
				if !errors.Is(err, ErrDecodedTooLarge) || len(got) != 64<<10 {
					t.Errorf("%s (%s) bomb: %d bytes, %v", c.header, c.coding, len(got), err)
				}
			case err == nil:
				t.Errorf("%s (%s) body %d: corrupt or cut short, decoded without error", c.header, c.coding, i)
			}
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

// realPages returns pages of a real-shaped web (markup of the real mix,
// sizes drawn from its lognormal law), about 3 MiB in all.
func realPages(b *testing.B) [][]byte {
	g, err := testweb.NewGen(testweb.GenConfig{Shape: testweb.ShapeReal, Hosts: 100, PagesPerHost: 10, Seed: 7, Port: 80, TLSPort: 443})
	if err != nil {
		b.Fatal(err)
	}
	var pages [][]byte
	total := 0
	for h := 0; total < 3<<20; h++ {
		var buf bytes.Buffer
		g.Render(&buf, h%100, h/100)
		pages = append(pages, buf.Bytes())
		total += buf.Len()
	}
	return pages
}

// BenchmarkDecodeRealPages decodes pages of the real shape as a web
// serves them: gzip at level 1 (as the test web does, and nginx by
// default) and 6 (Apache's default), brotli at 1 (the test web's) and 5.
// The figures are decoded bytes per second and the process's CPU time
// per page (user + system, garbage collection included), which a loaded
// machine disturbs less than the wall clock.
func BenchmarkDecodeRealPages(b *testing.B) {
	pages := realPages(b)
	for _, c := range []struct {
		name, header string
		level        int
	}{{"gzip-1", "gzip", 1}, {"gzip-6", "gzip", 6}, {"br-1", "br", 1}, {"br-5", "br", 5}} {
		for _, pooled := range []bool{false, true} {
			benchDecode(b, c.name, c.header, c.level, pooled, pages)
		}
	}
}

// benchDecode is one case of BenchmarkDecodeRealPages: pages encoded by
// coding at level, decoded by a Fetcher's pooled decompressors or by new
// ones each time.
func benchDecode(b *testing.B, name, coding string, level int, pooled bool, pages [][]byte) {
	var f *Fetcher
	if pooled {
		f, name = New(Options{}), name+"/pooled"
	} else {
		name += "/new"
	}
	b.Run(name, func(b *testing.B) {
		resps := make([]*Response, len(pages))
		size := 0
		for i, p := range pages {
			var buf bytes.Buffer
			var w io.WriteCloser
			if coding == "gzip" {
				w, _ = gzip.NewWriterLevel(&buf, level)
			} else {
				w = brotli.NewWriterLevel(&buf, level)
			}
			w.Write(p)
			w.Close()
			resps[i] = encodedResponse(coding, buf.Bytes())
			resps[i].f = f
			size += len(p)
		}
		b.SetBytes(int64(size))
		b.ReportAllocs()
		cpu0 := cpuTime()
		for b.Loop() {
			for i, r := range resps {
				got, err := DecodeBody(r, 8<<20)
				if err != nil || len(got) != len(pages[i]) {
					b.Fatalf("page %d: %d bytes, %v", i, len(got), err)
				}
			}
		}
		b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N*len(resps))/1e3, "cpu-µs/page")
	})
}

// cpuTime is the process's user and system time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
