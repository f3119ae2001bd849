package sieve

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"testing"
)

// keyRecv keeps the keys delivered.
type keyRecv struct {
	mu   sync.Mutex
	keys []string
}

func (r *keyRecv) PrepareToAppend() error { return nil }
func (r *keyRecv) Append(_ uint64, key []byte) error {
	r.mu.Lock()
	r.keys = append(r.keys, string(key))
	r.mu.Unlock()
	return nil
}
func (r *keyRecv) FinishedAppending() error { return nil }
func (r *keyRecv) NoMoreAppend() error      { return nil }

func groupedKey(host, page int) []byte { return fmt.Appendf(nil, "http://h%d.test/p%d", host, page) }

func openGrouped(t *testing.T, dir string, recv NewFlowReceiver, compressed bool) *DRUM {
	t.Helper()
	s, err := Open(dir, recv, Options{BufferKeys: 1000, Buckets: 8, Compressed: compressed, NoSync: true,
		Logger: quietLogger(), GroupHash: hostGroup})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSlotsMoveBetweenSieves(t *testing.T) {
	for _, compressed := range []bool{false, true} {
		t.Run(fmt.Sprintf("compressed=%v", compressed), func(t *testing.T) {
			testSlotsMove(t, compressed)
		})
	}
}

func testSlotsMove(t *testing.T, compressed bool) {
	const hosts, pages = 40, 300
	var ra, rb keyRecv
	a := openGrouped(t, t.TempDir(), &ra, compressed)
	b := openGrouped(t, t.TempDir(), &rb, compressed)
	defer b.Close()
	for h := 0; h < hosts; h++ {
		for p := 0; p < pages; p++ {
			if _, err := a.Enqueue(groupedKey(h, p)); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The moved hosts: the even ones. Their slots must not be shared with an
	// odd host for the counts below to be exact.
	moved := map[uint32]bool{}
	for h := 0; h < hosts; h += 2 {
		moved[Slot(Hash(fmt.Appendf(nil, "h%d.test", h)))] = true
	}
	for h := 1; h < hosts; h += 2 {
		if moved[Slot(Hash(fmt.Appendf(nil, "h%d.test", h)))] {
			t.Fatalf("host %d shares a slot with a moved host; pick other names", h)
		}
	}
	in := func(s uint32) bool { return moved[s] }
	var part []uint64
	if err := a.ExtractSlots(in, func(h uint64) error { part = append(part, h); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(part) != hosts/2*pages || !sort.SliceIsSorted(part, func(i, j int) bool { return part[i] < part[j] }) {
		t.Fatalf("extracted %d hashes (sorted %v), want %d", len(part), sort.SliceIsSorted(part, func(i, j int) bool { return part[i] < part[j] }), hosts/2*pages)
	}
	for _, h := range part {
		if !in(Slot(h)) {
			t.Fatalf("extracted hash %x of slot %d not asked for", h, Slot(h))
		}
	}
	n, err := b.InsertHashes(part)
	if err != nil || n != uint64(len(part)) {
		t.Fatalf("insert: %d, %v; want %d", n, err, len(part))
	}
	if n, err := b.InsertHashes(part[:10]); err != nil || n != 0 {
		t.Fatalf("insert again: %d new, %v", n, err)
	}
	// InsertHashesKnown names the hashes held already, each once: the
	// first ten (given twice), not the three new ones.
	fresh := []uint64{part[0] ^ 1, part[1] ^ 1, part[2] ^ 1}
	known, err := b.InsertHashesKnown(append(append(append([]uint64(nil), part[:10]...), fresh...), part[:10]...))
	if err != nil || len(known) != 10 {
		t.Fatalf("insert known: %d known (%v), want the 10 given before", len(known), err)
	}
	for i, h := range known {
		if h != part[i] {
			t.Fatalf("known[%d] = %x, want %x", i, h, part[i])
		}
	}
	if known, err := b.InsertHashesKnown(fresh); err != nil || len(known) != len(fresh) {
		t.Fatalf("the new hashes inserted: %d known again (%v), want %d", len(known), err, len(fresh))
	}
	// b now knows the moved hosts' pages: enqueued again, none is new; a
	// page never seen is.
	for h := 0; h < hosts; h += 2 {
		for p := 0; p <= pages; p++ {
			b.Enqueue(groupedKey(h, p))
		}
	}
	if err := b.Flush(); err != nil {
		t.Fatal(err)
	}
	if len(rb.keys) != hosts/2 {
		t.Fatalf("b delivered %d keys, want the %d unseen ones: %v", len(rb.keys), hosts/2, rb.keys[:min(5, len(rb.keys))])
	}
	for _, k := range rb.keys {
		if !bytes.HasSuffix([]byte(k), fmt.Appendf(nil, "/p%d", pages)) {
			t.Fatalf("b delivered %s, seen at a", k)
		}
	}
	// a gives them up: its store keeps only the odd hosts' pages, across a
	// reopen.
	del, err := a.DeleteSlots(in)
	if err != nil || del != uint64(len(part)) {
		t.Fatalf("delete: %d, %v; want %d", del, err, len(part))
	}
	if st := a.Stats(); st.StoredKeys != hosts/2*pages {
		t.Fatalf("a stores %d keys after the delete, want %d", st.StoredKeys, hosts/2*pages)
	}
	dir := a.dir
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	ra.keys = nil
	a = openGrouped(t, dir, &ra, compressed)
	defer a.Close()
	var left int
	a.ExtractSlots(in, func(uint64) error { left++; return nil })
	if left != 0 {
		t.Fatalf("%d hashes of deleted slots left", left)
	}
	a.Enqueue(groupedKey(1, 0))
	a.Enqueue(groupedKey(0, 0))
	a.Flush()
	if !slices.Equal(ra.keys, []string{string(groupedKey(0, 0))}) {
		t.Fatalf("a after the delete delivered %q", ra.keys)
	}
}

func TestGroupedHashKeepsGroupsTogether(t *testing.T) {
	gh := Hash([]byte("example.test"))
	for _, k := range []string{"http://example.test/", "http://example.test/a?b"} {
		h := KeyHash(gh, []byte(k))
		if Slot(h) != Slot(gh) || h&keyBitsMask != Hash([]byte(k))&keyBitsMask {
			t.Fatalf("KeyHash(%s) = %x: slot %d, want %d", k, h, Slot(h), Slot(gh))
		}
	}
}

// TestFormatGolden pins format version 2: the bytes of a small grouped,
// compressed store and its manifest. A change of the format must change
// formatVersion (and this digest).
func TestFormatGolden(t *testing.T) {
	dir := t.TempDir()
	s := openGrouped(t, dir, &keyRecv{}, true)
	for h := 0; h < 5; h++ {
		for p := 0; p < 50; p++ {
			s.Enqueue(groupedKey(h, p))
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	names, _ := filepath.Glob(filepath.Join(dir, "*"))
	slices.Sort(names)
	sum := sha256.New()
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(sum, "%s %d\n", filepath.Base(n), len(b))
		sum.Write(b)
	}
	const want = "0aac83c454c5750f"
	if got := hex.EncodeToString(sum.Sum(nil))[:16]; got != want {
		t.Fatalf("store digest %s, want %s (files %q)", got, want, names)
	}
}

func TestFormat1Refused(t *testing.T) {
	dir := t.TempDir()
	s := openGrouped(t, dir, &keyRecv{}, false)
	s.Enqueue(groupedKey(1, 1))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// The same manifest as version 1 wrote it.
	path := filepath.Join(dir, manifestName)
	b, _ := os.ReadFile(path)
	man, err := decodeManifest(b)
	if err != nil {
		t.Fatal(err)
	}
	man.flags = 0
	old := encodeManifest(man)
	binary.LittleEndian.PutUint32(old[8:], 1)
	binary.LittleEndian.PutUint32(old[len(old)-4:], crcOf(old[:len(old)-4]))
	os.WriteFile(path, old, 0o644)
	_, err = Open(dir, &keyRecv{}, Options{GroupHash: hostGroup, Logger: quietLogger()})
	if !errors.Is(err, ErrFormat1) {
		t.Fatalf("open of a version 1 store: %v, want ErrFormat1", err)
	}
	// A grouped store opened without a group hash is refused too.
	dir2 := t.TempDir()
	s = openGrouped(t, dir2, &keyRecv{}, false)
	s.Enqueue(groupedKey(1, 1))
	s.Close()
	if _, err := Open(dir2, &keyRecv{}, Options{Logger: quietLogger()}); err == nil {
		t.Fatal("a grouped store opened without GroupHash")
	}
}

func crcOf(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }
