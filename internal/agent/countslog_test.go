package agent

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
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

// openReceivedRig makes a state directory and a checkpoint directory
// named cpName, and opens the log of received counts in state. It returns
// both directories, the log's path and the log.
func openReceivedRig(t *testing.T, cpName string) (state, cp, path string, l *countsLog) {
	t.Helper()
	state = t.TempDir()
	cp = filepath.Join(t.TempDir(), cpName)
	if err := os.MkdirAll(cp, 0o755); err != nil {
		t.Fatal(err)
	}
	path = filepath.Join(state, receivedFile)
	l, err := openCountsLog(path)
	if err != nil {
		t.Fatal(err)
	}
	return state, cp, path, l
}

// TestReceivedCountsDurable: counts received in hand-off parts survive a
// crash of the receiver before its next checkpoint — recovery adds to the
// checkpoint's counts those received after it, once — and a part sent
// again (its acknowledgement lost in the crash, a torn frame after it) is
// not added twice; a trim keeps what the oldest kept checkpoint needs.
func TestReceivedCountsDurable(t *testing.T) {
	state, cp, path, l := openReceivedRig(t, "cp-000001")
	mem := map[uint64]int64{} // the frontier's counting map
	add := func(m map[uint64]int64) {
		for k, v := range m {
			mem[k] += v
		}
	}
	for range 2 { // the same part twice: added once
		if err := l.apply("a/2/1", nil, map[uint64]int64{1: 5, 2: 1}, add); err != nil {
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
	if err := l.apply("a/2/2", nil, map[uint64]int64{1: 3, 3: 4}, add); err != nil {
		t.Fatal(err)
	}
	if err := l.apply("b/2/1", nil, map[uint64]int64{4: 9}, add); err != nil {
		t.Fatal(err)
	}
	// kill -9 in the middle of the next frame's write.
	l.w.Write([]byte{40, 0, 0, 0, 1, 2})
	l.close()

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
	defer l.close()
	mem = map[uint64]int64{}
	if err := l.apply("a/2/2", nil, map[uint64]int64{1: 3, 3: 4}, add); err != nil || len(mem) != 0 {
		t.Fatalf("a part logged before the crash added again: %v %v", mem, err)
	}
	if err := l.apply("c/3/1", nil, map[uint64]int64{5: 2}, add); err != nil || mem[5] != 2 {
		t.Fatalf("a new part: %v %v", mem, err)
	}
	// The checkpoint at pos is the oldest kept: the counts before it go,
	// their ids stay (in a frame without entries just before pos), the
	// positions of the others stay.
	if err := l.trim(pos); err != nil {
		t.Fatal(err)
	}
	_, frames, _, err := readCountsLog(path)
	if err != nil || len(frames) != 4 || frames[0].id != "a/2/1" || len(frames[0].entries) != 0 ||
		frames[1].pos != pos || frames[1].id != "a/2/2" || frames[3].id != "c/3/1" {
		t.Fatalf("after the trim: %d frames, %v", len(frames), err)
	}
	if err := l.apply("d/3/1", nil, map[uint64]int64{6: 1}, add); err != nil {
		t.Fatal(err)
	}
	if _, frames, _, _ = readCountsLog(path); len(frames) != 5 || frames[4].id != "d/3/1" {
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

// TestReceivedCountsIDsOutliveTrim: a part whose frame a checkpoint's
// commit dropped, sent again after a restart (its acknowledgement lost), is
// not added twice: the trim keeps the ids of the frames it drops, the
// newest maxDroppedIDs of them, and the counts stay right through the
// recoveries that follow.
func TestReceivedCountsIDsOutliveTrim(t *testing.T) {
	state, cp, path, l := openReceivedRig(t, "cp-000002")
	mem := map[uint64]int64{}
	add := func(m map[uint64]int64) {
		for k, v := range m {
			mem[k] += v
		}
	}
	if err := l.apply("a/7/1", nil, map[uint64]int64{1: 5, 2: 3}, add); err != nil {
		t.Fatal(err)
	}
	if err := l.apply("a/7/2", nil, map[uint64]int64{1: 1, 2: -3}, add); err != nil {
		t.Fatal(err)
	}
	// A checkpoint after both, now the oldest kept: its commit trims.
	pos, release := l.hold()
	saveCountsFile(t, filepath.Join(cp, "counts"), mem)
	release()
	if err := writeReceivedPos(cp, pos); err != nil {
		t.Fatal(err)
	}
	if err := l.trim(pos); err != nil {
		t.Fatal(err)
	}
	if err := l.apply("b/7/1", nil, map[uint64]int64{3: 4}, add); err != nil {
		t.Fatal(err)
	}
	// kill -9: nothing closed. Recovery, then the restarted receiver.
	if err := os.WriteFile(filepath.Join(state, "counts"), mustRead(filepath.Join(cp, "counts")), 0o644); err != nil {
		t.Fatal(err)
	}
	if n, err := replayReceivedCounts(state, cp); err != nil || n != 1 {
		t.Fatalf("replayed %d parts (%v), want 1", n, err)
	}
	l, err := openCountsLog(path)
	if err != nil {
		t.Fatal(err)
	}
	mem = readCountsFile(t, filepath.Join(state, "counts"))
	for _, id := range []string{"a/7/1", "a/7/2", "b/7/1"} { // sent again
		if err := l.apply(id, nil, map[uint64]int64{1: 100, 3: 100}, add); err != nil {
			t.Fatal(err)
		}
	}
	if mem[1] != 6 || mem[2] != 0 || mem[3] != 4 {
		t.Fatalf("counts after parts sent again: %v, want 1:6 2:0 3:4", mem)
	}
	// The bound: of more dropped frames than it keeps ids, a trim keeps the
	// newest; the others' positions stay, and the file stays small.
	const keep = 8
	l.maxIDs = keep
	for i := range keep + 10 {
		if err := l.apply(fmt.Sprintf("c/8/%d", i+1), nil, map[uint64]int64{4: 1}, add); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.apply("d/8/1", nil, map[uint64]int64{5: 1}, add); err != nil {
		t.Fatal(err)
	}
	last := l.frames[len(l.frames)-1].pos
	if err := l.trim(last); err != nil {
		t.Fatal(err)
	}
	l.close()
	l, err = openCountsLog(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.close()
	if l.has("c/8/10") || !l.has("c/8/11") || !l.has(fmt.Sprintf("c/8/%d", keep+10)) || !l.has("d/8/1") {
		t.Errorf("after a trim past the bound: the oldest ids are not the ones forgotten")
	}
	if len(l.frames) != keep+1 || l.frames[keep].pos != last || l.frames[keep].id != "d/8/1" {
		t.Errorf("after a trim past the bound: %d frames, the last at %d (want %d, at %d)", len(l.frames), l.frames[len(l.frames)-1].pos, keep+1, last)
	}
	size := func() int64 {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	before := size()
	l.maxIDs = keep
	if err := l.trim(last); err != nil || size() != before {
		t.Errorf("a trim with only ids before its position, within the bound, rewrote the log (%v)", err)
	}
	// The checkpoint the trims kept (at last): its recovery adds d's part
	// only.
	if err := writeReceivedPos(cp, last); err != nil {
		t.Fatal(err)
	}
	if n, err := replayReceivedCounts(state, cp); err != nil || n != 1 {
		t.Errorf("replayed %d parts after the trims (%v), want 1", n, err)
	}
}

// TestReceivedCountsGolden pins the log of received counts byte for byte
// (testdata/counts_received.golden; go test -run Golden -update rewrites
// it): the id a trim kept of a frame it dropped (which had seen hashes), a
// frame of seen hashes and counts with a negative one, a frame without
// entries, a frame of seen hashes only; then reads it back.
func TestReceivedCountsGolden(t *testing.T) {
	path := filepath.Join(t.TempDir(), receivedFile)
	l, err := openCountsLog(path)
	if err != nil {
		t.Fatal(err)
	}
	nop := func(map[uint64]int64) {}
	if err := l.apply("a/2/1", []uint64{0x0a}, map[uint64]int64{0x0102030405060708: 5}, nop); err != nil {
		t.Fatal(err)
	}
	pos, release := l.hold()
	release()
	if err := l.apply("b/3/1", []uint64{0x1112131415161718, 0x21}, map[uint64]int64{7: 300, 9: -3}, nop); err != nil {
		t.Fatal(err)
	}
	if err := l.apply("c/3/2", nil, nil, nop); err != nil {
		t.Fatal(err)
	}
	if err := l.apply("d/3/3", []uint64{0x31}, nil, nop); err != nil {
		t.Fatal(err)
	}
	if err := l.trim(pos); err != nil {
		t.Fatal(err)
	}
	l.close()
	b := mustRead(path)
	golden := filepath.Join("testdata", "counts_received.golden")
	dump := hex.Dump(b)
	if *updateGolden {
		if err := os.WriteFile(golden, []byte(dump), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if want := string(mustRead(golden)); dump != want {
		t.Errorf("log of received counts changed:\n%s\nwant:\n%s", dump, want)
	}
	base, frames, _, err := readCountsLog(path)
	if err != nil || len(frames) != 4 || frames[0].pos != base || frames[1].pos != pos {
		t.Fatalf("read back: base %d, %d frames, %v", base, len(frames), err)
	}
	m := map[uint64]int64{}
	if err := frontier.ReadCounts(bytes.NewReader(append([]byte("\x00petrel-counts 2\n"), frames[1].entries...)), nil, func(k uint64, n int64) { m[k] += n }); err != nil || m[7] != 300 || m[9] != -3 {
		t.Fatalf("b's counts read back: %v %v", m, err)
	}
	if !slices.Equal(frames[1].seen, []uint64{0x1112131415161718, 0x21}) || !slices.Equal(frames[3].seen, []uint64{0x31}) || len(frames[3].entries) != 0 {
		t.Fatalf("seen hashes read back: b %x, d %x (entries %x)", frames[1].seen, frames[3].seen, frames[3].entries)
	}
	if frames[0].id != "a/2/1" || len(frames[0].entries) != 0 || len(frames[0].seen) != 0 || frames[2].id != "c/3/2" || len(frames[2].entries) != 0 || frames[3].id != "d/3/3" {
		t.Fatalf("frames read back: %+v", frames)
	}
	// A byte changed in the last frame: it is cut as torn, the others stay.
	bad := append([]byte(nil), b...)
	bad[len(bad)-1] ^= 1
	if err := os.WriteFile(path, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, frames, good, err := readCountsLog(path); err != nil || len(frames) != 3 || good != int64(len(b))-int64(len(appendReceivedFrame(nil, "d/3/3", []uint64{0x31}, nil))) {
		t.Fatalf("a damaged last frame: %d frames kept, %v", len(frames), err)
	}
	if err := os.WriteFile(path, append([]byte("PRCOUNTSX\n"), b[len(receivedMagic):]...), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := openCountsLog(path); err == nil {
		t.Error("a file with another header was opened")
	}
}
