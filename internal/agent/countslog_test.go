package agent

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/petrel-crawler/petrel/internal/frontier"
)

// saveCountsFile writes m as a counts file of version 2 (what the
// frontier's SaveCounts writes and a checkpoint holds).
func saveCountsFile(t *testing.T, path string, m map[uint64]int64) {
	t.Helper()
	b := []byte("\x00petrel-counts 2\n")
	for k, v := range m {
		b = binary.AppendUvarint(binary.LittleEndian.AppendUint64(b, k), uint64(v))
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func readCountsFile(t *testing.T, path string) map[uint64]int64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m := map[uint64]int64{}
	if err := frontier.ReadCounts(bytes.NewReader(b), nil, func(k uint64, n int64) { m[k] += n }); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestReceivedCountsDurable: counts received in hand-off parts survive a
// crash of the receiver before its next checkpoint — recovery adds to the
// checkpoint's counts those received after it, once — and a part sent
// again (its acknowledgement lost in the crash, a torn frame after it) is
// not added twice; a trim keeps what the oldest kept checkpoint needs.
func TestReceivedCountsDurable(t *testing.T) {
	state := t.TempDir()
	cp := filepath.Join(t.TempDir(), "cp-000001")
	if err := os.MkdirAll(cp, 0o755); err != nil {
		t.Fatal(err)
	}
	mem := map[uint64]int64{} // the frontier's counting map
	add := func(m map[uint64]int64) {
		for k, v := range m {
			mem[k] += v
		}
	}
	path := filepath.Join(state, receivedFile)
	l, err := openCountsLog(path)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 { // the same part twice: added once
		if err := l.apply("a/2/1", map[uint64]int64{1: 5, 2: 1}, add); err != nil {
			t.Fatal(err)
		}
	}
	// A checkpoint: its counts and the position they cover.
	pos, release := l.hold()
	saveCountsFile(t, filepath.Join(cp, "counts"), mem)
	release()
	if err := writeReceivedPos(cp, pos); err != nil {
		t.Fatal(err)
	}
	if err := l.apply("a/2/2", map[uint64]int64{1: 3, 3: 4}, add); err != nil {
		t.Fatal(err)
	}
	if err := l.apply("b/2/1", map[uint64]int64{4: 9}, add); err != nil {
		t.Fatal(err)
	}
	// kill -9 in the middle of the next frame's write.
	l.f.Write([]byte{40, 0, 0, 0, 1, 2})
	l.f.Close()

	// Recovery: the checkpoint's counts, then those received after it.
	if err := os.WriteFile(filepath.Join(state, "counts"), mustRead(filepath.Join(cp, "counts")), 0o644); err != nil {
		t.Fatal(err)
	}
	n, err := replayReceivedCounts(state, cp)
	if err != nil || n != 2 {
		t.Fatalf("replayed %d parts (%v), want 2", n, err)
	}
	want := map[uint64]int64{1: 8, 2: 1, 3: 4, 4: 9}
	got := readCountsFile(t, filepath.Join(state, "counts"))
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("count of key %d after recovery: %d, want %d (all: %v)", k, got[k], v, got)
		}
	}

	// The restarted receiver: the torn frame cut, the part sent again
	// after the crash not added, a new one added and logged.
	l, err = openCountsLog(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.f.Close()
	mem = map[uint64]int64{}
	if err := l.apply("a/2/2", map[uint64]int64{1: 3, 3: 4}, add); err != nil || len(mem) != 0 {
		t.Fatalf("a part logged before the crash added again: %v %v", mem, err)
	}
	if err := l.apply("c/3/1", map[uint64]int64{5: 2}, add); err != nil || mem[5] != 2 {
		t.Fatalf("a new part: %v %v", mem, err)
	}
	// The checkpoint at pos is the oldest kept: the frames before it go,
	// the positions of the others stay.
	if err := l.trim(pos); err != nil {
		t.Fatal(err)
	}
	base, frames, _, err := readCountsLog(path)
	if err != nil || base != pos || len(frames) != 3 || frames[0].id != "a/2/2" || frames[2].id != "c/3/1" {
		t.Fatalf("after the trim: base %d (want %d), %d frames, %v", base, pos, len(frames), err)
	}
	if err := l.apply("d/3/1", map[uint64]int64{6: 1}, add); err != nil {
		t.Fatal(err)
	}
	if _, frames, _, _ = readCountsLog(path); len(frames) != 4 || frames[3].id != "d/3/1" {
		t.Fatalf("a part after the trim is not logged after the others: %d frames", len(frames))
	}
	if err := os.WriteFile(filepath.Join(state, "counts"), mustRead(filepath.Join(cp, "counts")), 0o644); err != nil {
		t.Fatal(err)
	}
	if n, err := replayReceivedCounts(state, cp); err != nil || n != 4 {
		t.Fatalf("replayed %d parts after the trim (%v), want 4", n, err)
	}
	if got := readCountsFile(t, filepath.Join(state, "counts")); got[1] != 8 || got[5] != 2 || got[6] != 1 {
		t.Fatalf("counts after a second recovery: %v", got)
	}
}
