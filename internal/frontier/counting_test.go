package frontier

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/cespare/xxhash/v2"

	"github.com/petrel-crawler/petrel/internal/sieve"
)

func newCounts() *countingMap {
	c := &countingMap{}
	c.init(Assign{}.GroupHash)
	return c
}

// TestCountsFileGolden pins version 2 of the counts file: the header, then
// per key its count key (8 bytes, little-endian) and a uvarint count.
func TestCountsFileGolden(t *testing.T) {
	c := newCounts()
	sa := []byte("http://a.example:8080")
	for i := 0; i < 300; i++ {
		c.add(sa)
	}
	// The count key: the top 20 bits of xxhash("a.example") (the group),
	// the low 44 of the sieve's hash of the scheme+authority.
	const k = 0x6c888d1f57f8730f
	if sieve.Slot(k) != sieve.Slot(xxhash.Sum64String("a.example")) {
		t.Fatalf("count key %x: slot %d, not its host's %d", k, sieve.Slot(k), sieve.Slot(xxhash.Sum64String("a.example")))
	}
	want := append([]byte("\x00petrel-counts 2\n"), binary.LittleEndian.AppendUint64(nil, k)...)
	want = append(want, 0xac, 0x02) // 300
	var buf bytes.Buffer
	if err := c.writeTo(&buf); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Fatalf("counts file\n got %q\nwant %q", buf.Bytes(), want)
	}
	d := newCounts()
	if err := d.readFrom(bytes.NewReader(want)); err != nil {
		t.Fatal(err)
	}
	if n := d.get(sa); n != 300 {
		t.Fatalf("read back: count %d, want 300", n)
	}
}

// TestCountsFileVersion1 reads the counts file of an earlier Petrel (no
// header; per key its length, the scheme+authority and the count), each
// key converted to its count key, and refuses what is neither version.
func TestCountsFileVersion1(t *testing.T) {
	var v1 []byte
	for _, e := range []struct {
		sa string
		n  uint64
	}{{"http://a.example", 7}, {"https://b.example:8443", 1000}} {
		v1 = binary.AppendUvarint(v1, uint64(len(e.sa)))
		v1 = append(v1, e.sa...)
		v1 = binary.AppendUvarint(v1, e.n)
	}
	c := newCounts()
	if err := c.readFrom(bytes.NewReader(v1)); err != nil {
		t.Fatal(err)
	}
	if a, b, none := c.get([]byte("http://a.example")), c.get([]byte("https://b.example:8443")), c.get([]byte("http://c.example")); a != 7 || b != 1000 || none != 0 {
		t.Fatalf("counts %d, %d, %d; want 7, 1000, 0", a, b, none)
	}
	if err := newCounts().readFrom(bytes.NewReader(v1[:len(v1)-1])); err == nil || !strings.Contains(err.Error(), "unexpected EOF") {
		t.Errorf("truncated version 1: %v", err)
	}
	if err := newCounts().readFrom(strings.NewReader("\x00petrel-counts 9\n")); err == nil || !strings.Contains(err.Error(), "not a counts file") {
		t.Errorf("unknown version: %v", err)
	}
	if err := newCounts().readFrom(strings.NewReader("")); err != nil {
		t.Errorf("empty file: %v", err)
	}
}

// TestCountsTakeBySlot hands the counts of some group slots from one map
// to another, as a hand-off does.
func TestCountsTakeBySlot(t *testing.T) {
	c := newCounts()
	hosts := []string{"http://a.example", "http://a.example:81", "http://b.example", "http://c.example"}
	for i, h := range hosts {
		for j := 0; j <= i; j++ {
			c.add([]byte(h))
		}
	}
	slotA := sieve.Slot(xxhash.Sum64String("a.example"))
	took := c.take(func(s uint32) bool { return s == slotA })
	if len(took) != 2 {
		t.Fatalf("took %d keys, want a.example's 2", len(took))
	}
	if c.get([]byte("http://a.example")) != 0 || c.get([]byte("http://b.example")) != 3 {
		t.Fatal("take left a.example's counts or took b.example's")
	}
	d := newCounts()
	d.addAll(took)
	d.addAll(took)
	if a, a81 := d.get([]byte("http://a.example")), d.get([]byte("http://a.example:81")); a != 2 || a81 != 4 {
		t.Fatalf("added counts %d, %d; want 2, 4", a, a81)
	}
}
