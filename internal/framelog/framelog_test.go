package framelog

import (
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// golden is a log of header "TLOG1\n" and two frames, "a" and "bcd":
// length and CRC-32C little endian (checked against an independent
// CRC-32C), then the body.
const golden = "544c4f47310a" +
	"01000000" + "3043d0c1" + "61" +
	"03000000" + "58030d1b" + "626364"

func scanAll(t *testing.T, path string) (bodies []string, good int64, torn bool) {
	t.Helper()
	_, good, torn, err := Scan(path, "TLOG1\n", 6, 16, func(b []byte, off int64) error {
		bodies = append(bodies, string(b))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return bodies, good, torn
}

// TestFormatGolden pins the framing byte for byte, and reading it back:
// whole frames, a torn tail (cut short, bad checksum, over the bound)
// stopping before it.
func TestFormatGolden(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	err := Rewrite(path, []byte("TLOG1\n"), true, func(put func([]byte) error) error {
		return put([]byte("a")) // the second frame is written by Append below
	})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	b = Append(b, []byte("bcd"))
	if got := hex.EncodeToString(b); got != golden {
		t.Fatalf("format changed:\n got %s\nwant %s", got, golden)
	}
	whole, _ := hex.DecodeString(golden)
	for _, c := range []struct {
		name string
		b    []byte
		n    int
		good int64
		torn bool
	}{
		{"whole", whole, 2, 26, false},
		{"cut short", whole[:len(whole)-1], 1, 15, true},
		{"header cut short", whole[:18], 1, 15, true},
		{"bad checksum", append(whole[:len(whole)-1:len(whole)-1], 'x'), 1, 15, true},
		{"over the bound", append(whole[:15:15], 0xff, 0, 0, 0, 0, 0, 0, 0), 1, 15, true},
	} {
		os.WriteFile(path, c.b, 0o644)
		bodies, good, torn := scanAll(t, path)
		if len(bodies) != c.n || good != c.good || torn != c.torn {
			t.Errorf("%s: %q, good %d, torn %v; want %d frames, good %d, torn %v", c.name, bodies, good, torn, c.n, c.good, c.torn)
		}
	}
	os.WriteFile(path, []byte("XLOG1\n"), 0o644)
	if _, _, _, err := Scan(path, "TLOG1\n", 6, 16, nil); err == nil {
		t.Error("a wrong magic was read")
	}
}

// TestBody checks one frame in memory: the golden frame of "bcd" whole,
// then cut short, with a byte more, and with a bad checksum.
func TestBody(t *testing.T) {
	whole, _ := hex.DecodeString(golden)
	frame := whole[15:]
	if b, err := Body(frame); err != nil || string(b) != "bcd" {
		t.Fatalf("Body of a whole frame: %q, %v", b, err)
	}
	for _, bad := range [][]byte{frame[:len(frame)-1], append(frame[:len(frame):len(frame)], 'x'), append(frame[:len(frame)-1:len(frame)-1], 'x'), frame[:3]} {
		if _, err := Body(bad); !errors.Is(err, ErrTorn) {
			t.Errorf("Body(%x): %v, want ErrTorn", bad, err)
		}
	}
}

// TestWriterCutsAndRolls opens a log with a torn tail (cut at Open),
// appends, waits for durability and starts a new head file.
func TestWriterCutsAndRolls(t *testing.T) {
	dir := t.TempDir()
	whole, _ := hex.DecodeString(golden)
	p1 := SegmentPath(dir, 1)
	os.WriteFile(p1, whole[:20], 0o644)
	_, good, torn := scanAll(t, p1)
	if good != 15 || !torn {
		t.Fatalf("good %d torn %v", good, torn)
	}
	var mu sync.Mutex
	mu.Lock()
	defer mu.Unlock()
	syncs := 0
	w := NewWriter(&mu, func(f *os.File) error { syncs++; return f.Sync() })
	if err := w.Open(p1, good, 100); err != nil {
		t.Fatal(err)
	}
	if off, err := w.Write(Append(nil, []byte("bcd"))); err != nil || off != 15 || w.End() != 111 {
		t.Fatalf("write at %d, end %d: %v", off, w.End(), err)
	}
	if err := w.Wait(w.End()); err != nil || w.Durable() != 111 {
		t.Fatalf("durable %d: %v", w.Durable(), err)
	}
	if b, _ := os.ReadFile(p1); hex.EncodeToString(b) != golden {
		t.Fatalf("after the cut and the write: %x", b)
	}
	if err := w.Start(SegmentPath(dir, 2), "TLOG1\n"); err != nil || w.Size() != 6 || w.End() != 117 {
		t.Fatalf("start: size %d end %d: %v", w.Size(), w.End(), err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if nums, err := Segments(dir); err != nil || len(nums) != 2 || nums[1] != 2 {
		t.Fatalf("segments %v: %v", nums, err)
	}
}

// TestWriterFailedWrite: a write that fails and cannot be cut off again
// makes every later write fail, the positions unchanged.
func TestWriterFailedWrite(t *testing.T) {
	var mu sync.Mutex
	mu.Lock()
	defer mu.Unlock()
	w := NewWriter(&mu, (*os.File).Sync)
	if err := w.Start(filepath.Join(t.TempDir(), "log"), "TLOG1\n"); err != nil {
		t.Fatal(err)
	}
	w.f.Close() // the writes and the cut fail
	for range 2 {
		if _, err := w.Write(Append(nil, []byte("a"))); err == nil || w.Size() != 6 || w.End() != 6 {
			t.Fatalf("write to a closed file: %v, size %d, end %d", err, w.Size(), w.End())
		}
	}
	if w.werr == nil {
		t.Error("a failed cut did not stick")
	}
}

// TestWriterFailedStart: a new file that cannot be made durable is
// removed, the head unchanged, so it is never taken for the last segment.
func TestWriterFailedStart(t *testing.T) {
	dir := t.TempDir()
	var mu sync.Mutex
	mu.Lock()
	defer mu.Unlock()
	fail := false
	w := NewWriter(&mu, func(f *os.File) error {
		if fail {
			return errors.New("no room")
		}
		return f.Sync()
	})
	if err := w.Start(SegmentPath(dir, 1), "TLOG1\n"); err != nil {
		t.Fatal(err)
	}
	fail = true
	if err := w.Start(SegmentPath(dir, 2), "TLOG1\n"); err == nil {
		t.Fatal("a start whose fsync failed succeeded")
	}
	if nums, err := Segments(dir); err != nil || len(nums) != 1 || nums[0] != 1 {
		t.Fatalf("segments %v: %v", nums, err)
	}
	if w.Size() != 6 || w.End() != 6 {
		t.Fatalf("head changed: size %d end %d", w.Size(), w.End())
	}
}
