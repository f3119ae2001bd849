package store

import (
	"bytes"
	stdgzip "compress/gzip"
	"crypto/sha1"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/gzip"
)

// storedSizes are the body lengths the stored-body tests cover: empty, one
// byte, one whole stored block, one byte more, and several blocks.
var storedSizes = []int{0, 1, maxStoredBlock, maxStoredBlock + 1, 200_000}

// randomBytes returns n incompressible bytes, the same for the same seed.
func randomBytes(n int, seed uint64) []byte {
	b := make([]byte, n)
	rng := rand.New(rand.NewPCG(seed, 1))
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// testHead is a WARC header and HTTP header like a response record's.
func testHead(bodyLen int) []byte {
	return []byte("WARC/1.1\r\nWARC-Type: response\r\nWARC-Target-URI: http://example.test/a\r\n" +
		"Content-Type: application/http;msgtype=response\r\nContent-Length: " + strconv.Itoa(bodyLen+60) +
		"\r\n\r\nHTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Type: text/html\r\n\r\n")
}

// inflate reads the single gzip member m with Go's compress/gzip and with
// klauspost's, checks that both read the same bytes and that m holds
// nothing after its member, and returns the bytes.
func inflate(t *testing.T, m []byte) []byte {
	t.Helper()
	std, err := stdgzip.NewReader(bytes.NewReader(m))
	if err != nil {
		t.Fatal(err)
	}
	std.Multistream(false)
	got, err := io.ReadAll(std)
	if err != nil {
		t.Fatalf("compress/gzip: %v", err)
	}
	kp, err := gzip.NewReader(bytes.NewReader(m))
	if err != nil {
		t.Fatal(err)
	}
	kp.Multistream(false)
	got2, err := io.ReadAll(kp)
	if err != nil {
		t.Fatalf("klauspost gzip: %v", err)
	}
	if !bytes.Equal(got, got2) {
		t.Fatalf("compress/gzip read %d bytes, klauspost's %d other ones", len(got), len(got2))
	}
	var rest stdgzip.Reader
	if err := rest.Reset(bytes.NewReader(m[len(m):])); err != io.EOF {
		t.Fatalf("bytes after the member: %v", err)
	}
	return got
}

// TestStoredMember writes members of every stored size, the head
// deflated at several levels or stored (level "stored"), the body in parts
// that cross block boundaries, and reads them back with both gzip readers.
func TestStoredMember(t *testing.T) {
	const storedHead = 100 // not a level
	for _, level := range []int{gzip.BestSpeed, gzip.DefaultCompression, gzip.BestCompression, gzip.HuffmanOnly, storedHead} {
		for _, n := range storedSizes {
			t.Run(fmt.Sprintf("level=%d/body=%d", level, n), func(t *testing.T) {
				head, body := testHead(n), randomBytes(n, uint64(n))
				cut := n / 3
				parts := [][]byte{head[:20], head[20:], body[:cut], nil, body[cut:], recordEnd}
				want := append(append(bytes.Clone(head), body...), recordEnd...)
				var m bytes.Buffer
				var err error
				if level == storedHead {
					storedMember(&m, nil, 0, parts, 0)
					err = layoutErr(m.Bytes(), want, want, false)
				} else {
					fw, ferr := flate.NewWriter(nil, level)
					if ferr != nil {
						t.Fatal(ferr)
					}
					storedMember(&m, fw, gzipXFL(level), parts, 2)
					err = layoutErr(m.Bytes(), append(bytes.Clone(body), recordEnd...), want, true)
				}
				if got := inflate(t, m.Bytes()); !bytes.Equal(got, want) {
					t.Fatalf("read %d bytes, not the %d written", len(got), len(want))
				}
				if err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

// layoutErr checks member m against the format in member.go: the gzip
// header, then (flushed) a deflated head ended by a sync flush, then stored
// in stored blocks of at most 65,535 bytes, the last final, then the
// trailer of whole.
func layoutErr(m, stored, whole []byte, flushed bool) error {
	if !bytes.HasPrefix(m, []byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0}) || m[9] != 0xff {
		return fmt.Errorf("gzip header % x", m[:10])
	}
	var tail bytes.Buffer
	appendStoredBlocks(&tail, len(stored), [][]byte{stored})
	var trailer [8]byte
	binary.LittleEndian.PutUint32(trailer[:], crc32.ChecksumIEEE(whole))
	binary.LittleEndian.PutUint32(trailer[4:], uint32(len(whole)))
	tail.Write(trailer[:])
	if !bytes.HasSuffix(m, tail.Bytes()) {
		return fmt.Errorf("the member does not end with the stored blocks and the trailer")
	}
	head := m[10 : len(m)-tail.Len()]
	switch {
	case flushed && !bytes.HasSuffix(head, []byte{0, 0, 0xff, 0xff}):
		return fmt.Errorf("the head does not end with a sync flush: % x", head[max(0, len(head)-4):])
	case !flushed && len(head) > 0:
		return fmt.Errorf("%d bytes between the gzip header and the stored blocks", len(head))
	}
	for off, left := len(m)-tail.Len(), len(stored); ; left -= maxStoredBlock {
		k := min(left, maxStoredBlock)
		final := byte(0)
		if left == k {
			final = 1
		}
		if h := m[off : off+5]; h[0] != final || int(binary.LittleEndian.Uint16(h[1:])) != k ||
			binary.LittleEndian.Uint16(h[3:]) != ^uint16(k) {
			return fmt.Errorf("stored block header % x at %d, want %d bytes, final %d", h, off, k, final)
		}
		off += 5 + k
		if final == 1 {
			return nil
		}
	}
}

// compressedBytes returns n bytes of a gzip-compressed HTML page: what a
// body as transferred looks like (deflate's Huffman coding still shrinks
// it a little, unlike random bytes).
func compressedBytes(n int, seed uint64) []byte {
	var b bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&b, gzip.BestSpeed)
	for b.Len() < n {
		zw.Write(htmlPage(64<<10, seed))
		seed++
		zw.Flush()
	}
	zw.Close()
	return b.Bytes()[:n]
}

// TestStoredBodies writes responses whose bodies came compressed (by
// Content-Encoding or by Content-Type) and ones that did not, the heads
// deflated (StoreBelow -1) or stored (the default), and checks every
// record's member, from the offset and length Write returned, reads back
// as the record, that gowarc and CheckFile read the file, and that only
// the compressed bodies are stored, as member.go lays them out.
func TestStoredBodies(t *testing.T) {
	type tcase struct {
		name, headers string
		body          []byte
		stored        bool
	}
	var cases []tcase
	for _, n := range storedSizes {
		cases = append(cases, tcase{fmt.Sprintf("gzip-%d", n), "Content-Encoding: gzip\r\n", compressedBytes(n, uint64(n)), n > 0})
	}
	text := []byte(strings.Repeat("a compressible page of text ", 3000))
	cases = append(cases,
		tcase{"br", "Content-Type: text/html\r\nContent-Encoding: BR\r\n", compressedBytes(30_000, 7), true},
		tcase{"png", "Content-Type: image/PNG; x=y\r\n", compressedBytes(30_000, 8), true},
		tcase{"identity", "Content-Type: text/html\r\nContent-Encoding: identity\r\n", text, false},
		tcase{"html", "Content-Type: text/html\r\n", append([]byte("<p>"), text...), false}) // not a revisit of the above
	for _, storeBelow := range []int{-1, 0} {
		t.Run("storeBelow="+strconv.Itoa(storeBelow), func(t *testing.T) {
			opts := testOptions(t)
			opts.GzipLevel = gzip.BestSpeed
			opts.StoreBelow = storeBelow
			w, err := Open(opts)
			if err != nil {
				t.Fatal(err)
			}
			results := make([]Result, len(cases))
			for i, c := range cases {
				resp := append(response("200 OK", c.headers, ""), c.body...)
				results[i], err = w.Write(&Exchange{TargetURI: "http://example.test/" + c.name, Request: request("/" + c.name), Response: resp})
				if err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(opts.Dir, results[0].File)
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			recs := readWARC(t, path)
			if _, err := CheckFile(path); err != nil {
				t.Fatal(err)
			}
			for i, c := range cases {
				res := results[i]
				checkStoredBody(t, c.name, raw[res.Offset:res.Offset+res.Length], blockAt(t, recs, res.Offset), c.body, c.stored, storeBelow < 0)
			}
		})
	}
}

// checkStoredBody checks that the member m of the response record whose
// block is block reads back as that record, that the block ends with
// body, and that the body is stored (the head deflated, or not: stored
// too) if and only if stored. A record under DefaultStoreBelow, stored
// whole, is not checked for its layout.
func checkStoredBody(t *testing.T, name string, m, block, body []byte, stored, headDeflated bool) {
	t.Helper()
	got := inflate(t, m)
	if !bytes.HasPrefix(got, []byte(warcVersion)) || !bytes.HasSuffix(got, append(bytes.Clone(block), recordEnd...)) ||
		!bytes.Contains(got, []byte("\r\nContent-Length: "+strconv.Itoa(len(block))+"\r\n\r\n")) {
		t.Errorf("%s: the member does not read as the record", name)
	}
	if !bytes.HasSuffix(block, body) {
		t.Errorf("%s: the block does not end with the body", name)
	}
	var err error
	switch {
	case headDeflated:
		err = layoutErr(m, append(bytes.Clone(body), recordEnd...), got, true)
	case len(got) < DefaultStoreBelow:
		return
	default:
		err = layoutErr(m, got, got, false)
	}
	if (err == nil) != stored {
		t.Errorf("%s: body stored %v (%v), want %v", name, err == nil, err, stored)
	}
}

// blockAt returns the block of the record of recs at offset.
func blockAt(t *testing.T, recs []readRecord, offset int64) []byte {
	t.Helper()
	for _, r := range recs {
		if r.offset == offset {
			return r.block
		}
	}
	t.Fatalf("no record at offset %d", offset)
	return nil
}

// BenchmarkCompressReal turns the response records of the real shape's
// compressed pages into gzip members at level 1, one per op: the whole
// record deflated, as before bodies were stored ("deflated"); the body
// stored and the head deflated ("stored-head-deflated", StoreBelow -1);
// the body stored and the head, under StoreBelow, with it ("stored", the
// default). It reports the members' bytes per page over one pass of the
// pages (the same pages for each) and the process's CPU per op (ns/op is
// wall time, which a loaded machine stretches); SetBytes counts the
// response.
func BenchmarkCompressReal(b *testing.B) {
	resps := realResponses(b)
	for _, tc := range []struct {
		name       string
		stored     bool
		storeBelow int
	}{{"deflated", false, 0}, {"stored-head-deflated", true, -1}, {"stored", true, 0}} {
		b.Run(tc.name, func(b *testing.B) {
			opts := testOptions(b)
			opts.GzipLevel = gzip.BestSpeed
			opts.StoreBelow = tc.storeBelow
			w, err := Open(opts)
			if err != nil {
				b.Fatal(err)
			}
			defer w.Close()
			recs := make([]recordSpec, len(resps))
			var size, pass int64
			for i, raw := range resps {
				ex := &Exchange{TargetURI: "https://www.example.test/articles/" + strconv.Itoa(i), Response: raw}
				head := []field{{"WARC-Type", "response"}, {"WARC-Record-ID", newRecordID()}, {"WARC-Date", warcDate(time.Now())},
					{"WARC-Target-URI", ex.TargetURI}, {"WARC-IP-Address", "127.97.0.12"}, {"WARC-Concurrent-To", newRecordID()}}
				responseRecord(&recs[i], sha1.New(), head, ex, parseResponse(raw), "sha1:LQ3A4FJ7B2K5ZP6WQXG4Y3VDBMTN2HCE")
				if !tc.stored {
					recs[i].bodyAt = 0
				}
				size += int64(len(raw))
				m, _ := w.compress(&recs[i])
				pass += int64(m.Len())
				w.putBuf(m)
			}
			b.SetBytes(size / int64(len(recs)))
			i := 0
			cpu0 := processCPU(b)
			for b.Loop() {
				m, _ := w.compress(&recs[i%len(recs)])
				w.putBuf(m)
				i++
			}
			b.ReportMetric(float64((processCPU(b)-cpu0).Nanoseconds())/float64(i)/1e3, "cpu-µs/op")
			b.ReportMetric(float64(pass)/float64(len(recs)), "member-B/page")
			b.ReportMetric(float64(size)/float64(len(recs)), "resp-B/page")
		})
	}
}
