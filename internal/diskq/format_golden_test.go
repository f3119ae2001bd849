package diskq

import (
	"bytes"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"hash/crc32"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files in testdata")

// formatTrace records, after each step of a scenario, the files of a queue
// directory (name, size, CRC-32 and the 32-byte lines that changed since the
// previous step) and the files fsynced during the step. Compared with a
// golden file, it pins the on-disk format byte for byte, and also what is on
// disk when (flush points), which files are fsynced, and in what order.
type formatTrace struct {
	t     *testing.T
	dir   string
	out   strings.Builder
	prev  map[string][]byte
	syncs []string
}

func newFormatTrace(t *testing.T) *formatTrace {
	return &formatTrace{t: t, dir: t.TempDir(), prev: map[string][]byte{}}
}

// fsync records a sync point and syncs f (Options.fsyncFile).
func (tr *formatTrace) fsync(f *os.File) error {
	name, err := filepath.Rel(tr.dir, f.Name())
	if err != nil {
		name = f.Name()
	}
	tr.syncs = append(tr.syncs, name)
	return f.Sync()
}

func (tr *formatTrace) must(err error) {
	tr.t.Helper()
	if err != nil {
		tr.t.Fatal(err)
	}
}

// options returns the options of the golden runs, with fsync traced.
func (tr *formatTrace) options() Options {
	return Options{SegmentBytes: 4096, BufferBytes: 4096, Sync: true,
		Logger: slog.New(slog.DiscardHandler), fsyncFile: tr.fsync}
}

// goldenRecord returns record i, n bytes long.
func goldenRecord(i, n int) []byte {
	b := make([]byte, n)
	for k := range b {
		b[k] = byte('a' + (i*7+k)%26)
	}
	return b
}

// step notes the result of an operation and the state of the directory.
func (tr *formatTrace) step(op string, result any, err error) {
	tr.t.Helper()
	fmt.Fprintf(&tr.out, "== %s", op)
	if result != nil {
		fmt.Fprintf(&tr.out, " -> %v", result)
	}
	if err != nil {
		fmt.Fprintf(&tr.out, " error: %v", strings.ReplaceAll(err.Error(), tr.dir, "DIR"))
	}
	tr.out.WriteString("\n")
	if len(tr.syncs) > 0 {
		fmt.Fprintf(&tr.out, "fsync %s\n", strings.Join(tr.syncs, ", "))
		tr.syncs = tr.syncs[:0]
	}
	ents, rerr := os.ReadDir(tr.dir)
	if rerr != nil {
		tr.t.Fatal(rerr)
	}
	seen := map[string]bool{}
	for _, e := range ents {
		name := e.Name()
		seen[name] = true
		b, rerr := os.ReadFile(filepath.Join(tr.dir, name))
		if rerr != nil {
			tr.t.Fatal(rerr)
		}
		if name == queuesIndexName {
			b = tr.canonicalIndex(b)
		}
		old, had := tr.prev[name]
		if had && bytes.Equal(old, b) {
			fmt.Fprintf(&tr.out, "  %s %d %08x\n", name, len(b), crc32.ChecksumIEEE(b))
			continue
		}
		fmt.Fprintf(&tr.out, "* %s %d %08x\n", name, len(b), crc32.ChecksumIEEE(b))
		for off := 0; off < len(b); off += 32 {
			line := b[off:min(off+32, len(b))]
			if off+len(line) <= len(old) && bytes.Equal(old[off:off+len(line)], line) {
				continue
			}
			fmt.Fprintf(&tr.out, "    %06x %x\n", off, line)
		}
		tr.prev[name] = b
	}
	var gone []string
	for name := range tr.prev {
		if !seen[name] {
			gone = append(gone, name)
		}
	}
	sort.Strings(gone)
	for _, name := range gone {
		fmt.Fprintf(&tr.out, "- %s\n", name)
		delete(tr.prev, name)
	}
}

// canonicalIndex checks the checksum of a queues.index and returns it with
// its queue table sorted by id (Close writes it in map order) and the
// checksum recomputed.
func (tr *formatTrace) canonicalIndex(b []byte) []byte {
	tr.t.Helper()
	if len(b) < 28 || crcOf(b[:len(b)-4]) != binary.LittleEndian.Uint32(b[len(b)-4:]) {
		tr.t.Fatalf("queues.index: bad checksum")
	}
	ns := int(binary.LittleEndian.Uint32(b[12:]))
	head := 16 + 40*ns + 8
	nids := int(binary.LittleEndian.Uint64(b[head-8:]))
	p := b[head : len(b)-4]
	ents := make([][]byte, 0, nids)
	for range nids {
		l := 36 + int(binary.LittleEndian.Uint32(p[32:]))
		ents = append(ents, p[:l])
		p = p[l:]
	}
	sort.Slice(ents, func(i, j int) bool {
		return binary.LittleEndian.Uint64(ents[i]) < binary.LittleEndian.Uint64(ents[j])
	})
	out := append([]byte(nil), b[:head]...)
	for _, e := range ents {
		out = append(out, e...)
	}
	return binary.LittleEndian.AppendUint32(out, crcOf(out))
}

func (tr *formatTrace) check(golden string) {
	tr.t.Helper()
	path := filepath.Join("testdata", golden)
	got := tr.out.String()
	if *updateGolden {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			tr.t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		tr.t.Fatal(err)
	}
	if got == string(want) {
		return
	}
	gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
	for i := range max(len(gl), len(wl)) {
		var g, w string
		if i < len(gl) {
			g = gl[i]
		}
		if i < len(wl) {
			w = wl[i]
		}
		if g != w {
			tr.t.Fatalf("%s: line %d differs:\n got %q\nwant %q", path, i+1, g, w)
		}
	}
}

// TestQueueFormatGolden pins the files a Queue writes, and when, against
// testdata/queue_format_v2.golden (go test -run Golden -update rewrites it):
// format version 2, blocks compressed with zstd (the compressed bytes are
// those of the klauspost/compress version in go.mod; a new version of it
// may write other bytes, which the golden file then shows).
func TestQueueFormatGolden(t *testing.T) {
	tr := newFormatTrace(t)
	opts := tr.options()
	q, err := Open(tr.dir, opts)
	tr.step("Open", nil, err)
	tr.must(err)
	next := 0
	record := goldenRecord
	push := func(k int, size func(i int) int) {
		t.Helper()
		var err error
		first := next
		for range k {
			if err = q.Push(record(next, size(next))); err != nil {
				break
			}
			next++
		}
		tr.step(fmt.Sprintf("Push records %d..%d", first, next-1), nil, err)
	}
	small := func(i int) int { return 10 + i*37%150 }
	popped := 0
	pop := func(k int) {
		t.Helper()
		var lens []int
		var err error
		for range k {
			var rec []byte
			var ok bool
			rec, ok, err = q.Pop(nil)
			if err != nil || !ok {
				break
			}
			lens = append(lens, len(rec))
			popped++
		}
		tr.step(fmt.Sprintf("Pop %d", k), lens, err)
	}
	for range 10 {
		push(5, small)
	}
	push(1, func(int) int { return 5000 }) // larger than the write buffer
	push(3, small)
	pop(4)
	pop(4)
	pop(4)
	tr.step("Sync", nil, q.Sync())
	m1, err := q.Mark()
	tr.step("Mark", m1, err)
	for range 8 {
		push(5, small)
	}
	for range 6 {
		pop(5)
	}
	m2, err := q.Mark()
	tr.step("Mark", m2, err)
	tr.step("Release first mark", nil, q.Release(m1))
	pop(3)
	tr.step("Close", nil, q.Close())

	q, err = Open(tr.dir, opts)
	tr.must(err)
	tr.step("Open", q.Recovery(), err)
	push(10, small)
	pop(2)
	q.crashForTest()
	tr.step("crash", nil, nil)

	q, err = OpenAt(tr.dir, m2, opts)
	tr.must(err)
	tr.step("OpenAt second mark", q.Recovery(), err)
	pop(100)
	push(12, small)
	tr.step("Sync", nil, q.Sync())
	push(2, small)
	q.crashForTest()
	tr.step("crash", nil, nil)

	// A torn tail: half a record after the last valid one.
	segs, err := listSegments(tr.dir, queueExt)
	tr.must(err)
	f, err := os.OpenFile(filepath.Join(tr.dir, segName(segs[len(segs)-1], queueExt)), os.O_WRONLY|os.O_APPEND, 0)
	tr.must(err)
	f.Write([]byte{40, 0, 0, 0, 1, 2, 3}) // shorter than a block header
	f.Close()
	tr.step("append torn record", nil, nil)
	q, err = Open(tr.dir, opts)
	tr.must(err)
	tr.step("Open", q.Recovery(), err)
	pop(100)
	// Records that do not compress: stored blocks, roll-over to a new
	// segment; the last records popped are still in the open block, and
	// popping them writes nothing.
	record = noise
	for range 4 {
		push(10, func(int) int { return 200 })
	}
	pop(40)
	tr.step("Close", q.Len(), q.Close())
	tr.check("queue_format_v2.golden")
}

// TestQueuesFormatGolden pins the files a Queues writes, and when, against
// testdata/queues_format.golden (go test -run Golden -update rewrites it).
func TestQueuesFormatGolden(t *testing.T) {
	tr := newFormatTrace(t)
	opts := tr.options()
	opts.SegmentBytes = 8192 // a current segment can outgrow the write buffer
	m, err := OpenQueues(tr.dir, opts)
	tr.step("OpenQueues", nil, err)
	tr.must(err)
	next := 0
	enqueue := func(k int, id func(i int) uint64, size func(i int) int) {
		t.Helper()
		var err error
		first := next
		for range k {
			if err = m.Enqueue(id(next), goldenRecord(next, size(next))); err != nil {
				break
			}
			next++
		}
		tr.step(fmt.Sprintf("Enqueue records %d..%d", first, next-1), nil, err)
	}
	roundRobin := func(i int) uint64 { return uint64(1 + i%5) }
	small := func(i int) int { return 20 + i*53%200 }
	lens := func(recs [][]byte) []int {
		var l []int
		for _, r := range recs {
			l = append(l, len(r))
		}
		return l
	}
	for range 12 {
		enqueue(10, roundRobin, small)
	}
	enqueue(1, func(int) uint64 { return 9 }, func(int) int { return 5000 })
	enqueue(10, roundRobin, small)

	recs, err := m.DequeueN(1, 5)
	tr.step("DequeueN(1, 5)", lens(recs), err)
	for range 3 {
		rec, ok, err := m.Dequeue(2, nil)
		tr.step("Dequeue(2)", fmt.Sprint(len(rec), ok), err)
	}
	recs, err = m.Peek(4)
	tr.step("Peek(4)", lens(recs), err)
	n, err := m.Remove(3)
	tr.step("Remove(3)", n, err)
	var count, sum int
	err = m.Snapshot(func(id uint64, rec []byte) error {
		count++
		sum += int(id) * len(rec)
		return nil
	})
	tr.step("Snapshot", fmt.Sprint(count, sum), err)
	recs, err = m.DequeueN(5, 20)
	tr.step("DequeueN(5, 20)", lens(recs), err)
	err = m.Compact()
	tr.step("Compact", m.compactions, err)
	tr.step("Sync", nil, m.Sync())
	recs, err = m.DequeueN(9, 1)
	tr.step("DequeueN(9, 1)", lens(recs), err)
	tr.step("Close", m.Total(), m.Close())

	m, err = OpenQueues(tr.dir, opts)
	tr.must(err)
	tr.step("OpenQueues", m.Recovery(), err)
	for _, id := range []uint64{1, 2, 4, 5} {
		recs, err := m.DequeueN(id, 1000)
		tr.step(fmt.Sprintf("DequeueN(%d, 1000)", id), lens(recs), err)
	}
	enqueue(5, func(int) uint64 { return 11 }, small)
	tr.step("Close", m.Total(), m.Close())

	m, err = OpenQueues(tr.dir, opts)
	tr.must(err)
	tr.step("OpenQueues", m.Recovery(), err)
	enqueue(40, roundRobin, small)
	tr.step("Sync", nil, m.Sync())
	enqueue(3, roundRobin, small)
	m.crashForTest()
	tr.step("crash", nil, nil)

	m, err = OpenQueues(tr.dir, opts)
	tr.must(err)
	tr.step("OpenQueues", m.Recovery(), err)
	recs, err = m.DequeueN(11, 1000)
	tr.step("DequeueN(11, 1000)", lens(recs), err)
	// Drained while the current segment is larger than the write buffer
	// and part of it still buffered: a fresh segment replaces it.
	enqueue(60, func(int) uint64 { return 12 }, small)
	for _, id := range []uint64{1, 2, 3, 4, 5, 12} {
		recs, err := m.DequeueN(id, 1000)
		tr.step(fmt.Sprintf("DequeueN(%d, 1000)", id), lens(recs), err)
	}
	enqueue(3, roundRobin, small)
	tr.step("Close", m.Total(), m.Close())
	tr.check("queues_format.golden")
}

// copyTestdata copies the files of the directory src into a fresh
// temporary directory, and returns it with their contents by name.
func copyTestdata(t *testing.T, src string) (dir string, files map[string][]byte) {
	t.Helper()
	dir = t.TempDir()
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	files = map[string][]byte{}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = b
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir, files
}

// TestQueueFormatV1Refused: a queue directory of format version 1
// (testdata/queue-v1, written by an earlier Petrel: uncompressed records,
// Positions of 45 bytes) is refused with ErrOldFormat and a message naming
// the file and both versions, and is left as it was.
func TestQueueFormatV1Refused(t *testing.T) {
	dir, files := copyTestdata(t, "testdata/queue-v1")
	opts := Options{Logger: slog.New(slog.DiscardHandler)}
	_, err := Open(dir, opts)
	if !errors.Is(err, ErrOldFormat) || !strings.Contains(err.Error(), "0000000000000001.dq: format version 1, this version reads 2") {
		t.Fatalf("Open = %v, want ErrOldFormat naming the segment and the versions", err)
	}
	os.Remove(filepath.Join(dir, "0000000000000001.dq")) // the metadata alone is refused too
	if _, err := Open(dir, opts); !errors.Is(err, ErrOldFormat) || !strings.Contains(err.Error(), "queue.meta: format version 1") {
		t.Fatalf("Open without segments = %v, want ErrOldFormat naming queue.meta", err)
	}
	var pos Position
	if err := pos.UnmarshalBinary(files["mark.pos"]); !errors.Is(err, ErrOldFormat) {
		t.Fatalf("UnmarshalBinary(version 1 mark) = %v, want ErrOldFormat", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, queueMetaName)); !bytes.Equal(b, files[queueMetaName]) {
		t.Error("refusing the queue changed its metadata")
	}
}

// TestQueuesFormatV1Refused: a Queues directory of format version 1
// (testdata/queues-v1, written by an earlier Petrel: one uncompressed
// record after another) is refused with ErrOldFormat and a message naming
// the file and both versions, by OpenQueues and by OpenCheckpoint (a
// checkpoint taken by an earlier Petrel), and is left as it was.
func TestQueuesFormatV1Refused(t *testing.T) {
	dir, files := copyTestdata(t, "testdata/queues-v1")
	opts := Options{Logger: slog.New(slog.DiscardHandler)}
	want := "0000000000000001.mq: format version 1, this version reads 2"
	if _, err := OpenCheckpoint(dir, opts); !errors.Is(err, ErrOldFormat) || !strings.Contains(err.Error(), want) {
		t.Fatalf("OpenCheckpoint = %v, want ErrOldFormat naming the segment and the versions", err)
	}
	if _, err := OpenQueues(dir, opts); !errors.Is(err, ErrOldFormat) || !strings.Contains(err.Error(), want) {
		t.Fatalf("OpenQueues = %v, want ErrOldFormat naming the segment and the versions", err)
	}
	os.Remove(filepath.Join(dir, "0000000000000001.mq")) // the index alone is refused too
	if _, err := OpenCheckpoint(dir, opts); !errors.Is(err, ErrOldFormat) || !strings.Contains(err.Error(), "queues.index: format version 1") {
		t.Fatalf("OpenCheckpoint without segments = %v, want ErrOldFormat naming queues.index", err)
	}
	for name, b := range files {
		if name == "0000000000000001.mq" {
			continue
		}
		if got, _ := os.ReadFile(filepath.Join(dir, name)); !bytes.Equal(got, b) {
			t.Errorf("refusing the queues changed %s", name)
		}
	}
}
