package diskq

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func testOpts(seg int64) Options {
	return Options{SegmentBytes: seg, BufferBytes: 4096, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

// rec returns a deterministic record of n bytes, tagged with i.
func rec(i, n int) []byte {
	b := make([]byte, n)
	for j := range b {
		b[j] = byte(i*31 + j)
	}
	if n >= 4 {
		copy(b, fmt.Sprintf("%04d", i%10000))
	}
	return b
}

// noise returns a record of n bytes that does not compress, tagged with i,
// for tests that need the file sizes of uncompressed data.
func noise(i, n int) []byte {
	b := make([]byte, n)
	x := uint64(i)*0x9e3779b97f4a7c15 + 1
	for j := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[j] = byte(x)
	}
	if n >= 4 {
		copy(b, fmt.Sprintf("%04d", i%10000))
	}
	return b
}

func segFiles(t *testing.T, dir, ext string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "*"+ext))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func mustPop(t *testing.T, q *Queue) []byte {
	t.Helper()
	r, ok, err := q.Pop(nil)
	if err != nil || !ok {
		t.Fatalf("Pop: ok=%v err=%v", ok, err)
	}
	return r
}

func TestQueueModel(t *testing.T) {
	cases := []struct {
		name   string
		seg    int64
		maxLen int
		ops    int
		sync   bool
	}{
		{"small-records-many-segments", 4096, 100, 6000, false},
		{"records-larger-than-buffer", 16384, 9000, 600, false},
		{"default-segment", 0, 60, 4000, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			opts := testOpts(tc.seg)
			opts.Sync = tc.sync
			rng := rand.New(rand.NewPCG(1, uint64(len(tc.name))))
			q, err := Open(dir, opts)
			if err != nil {
				t.Fatal(err)
			}
			var model [][]byte
			next := 0
			for op := 0; op < tc.ops; op++ {
				switch r := rng.IntN(100); {
				case r < 55:
					b := rec(next, rng.IntN(tc.maxLen+1))
					next++
					if err := q.Push(b); err != nil {
						t.Fatal(err)
					}
					model = append(model, b)
				case r < 97:
					got, ok, err := q.Pop(nil)
					if err != nil {
						t.Fatal(err)
					}
					if ok != (len(model) > 0) {
						t.Fatalf("op %d: Pop ok=%v with model len %d", op, ok, len(model))
					}
					if ok {
						if !bytes.Equal(got, model[0]) {
							t.Fatalf("op %d: Pop = %q, want %q", op, got[:min(8, len(got))], model[0][:min(8, len(model[0]))])
						}
						model = model[1:]
					}
				case r < 98:
					if err := q.Sync(); err != nil {
						t.Fatal(err)
					}
				default:
					if err := q.Close(); err != nil {
						t.Fatal(err)
					}
					if q, err = Open(dir, opts); err != nil {
						t.Fatal(err)
					}
					if rc := q.Recovery(); rc != (Recovery{}) {
						t.Fatalf("clean reopen reported recovery %+v", rc)
					}
				}
				if q.Len() != int64(len(model)) {
					t.Fatalf("op %d: Len = %d, want %d", op, q.Len(), len(model))
				}
			}
			for len(model) > 0 {
				if got := mustPop(t, q); !bytes.Equal(got, model[0]) {
					t.Fatal("drain mismatch")
				}
				model = model[1:]
			}
			if _, ok, _ := q.Pop(nil); ok {
				t.Fatal("Pop on empty queue returned a record")
			}
			if n := len(segFiles(t, dir, queueExt)); n != 1 {
				t.Errorf("%d segment files after draining, want 1 (consumed segments deleted)", n)
			}
			if err := q.Close(); err != nil {
				t.Fatal(err)
			}
			if err := q.Close(); !errors.Is(err, ErrClosed) {
				t.Errorf("second Close = %v, want ErrClosed", err)
			}
		})
	}
}

func TestQueuePopReachesWriteBuffer(t *testing.T) {
	q, err := Open(t.TempDir(), testOpts(0))
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	for i := range 3 {
		if err := q.Push(rec(i, 60)); err != nil {
			t.Fatal(err)
		}
		if got := mustPop(t, q); !bytes.Equal(got, rec(i, 60)) {
			t.Fatalf("Pop %d mismatch", i)
		}
	}
	// Each Pop sealed the one record pushed before it as a block.
	if q.Bytes() > segHeaderSize+3*(blockHeader+1+60) {
		t.Errorf("Bytes = %d", q.Bytes())
	}
	if err := q.Push(make([]byte, MaxRecordBytes+1)); !errors.Is(err, ErrTooLarge) {
		t.Errorf("oversized Push = %v, want ErrTooLarge", err)
	}
}

// TestQueueTornTail simulates a crash that tore the last block: the
// reopened queue holds exactly the records of the complete blocks and
// reports the cut.
func TestQueueTornTail(t *testing.T) {
	const blocks, per, size = 5, 10, 100
	cases := []struct {
		name  string
		clean bool // Close before tearing, else crash after Sync
		cut   int  // bytes removed from the end of the last segment
		lost  int  // blocks lost
	}{
		{"crash-mid-data", false, 30, 1},
		{"crash-mid-header", false, -(blockHeader - 4), 1}, // negative: leave that much of the last block
		{"crash-after-header", false, -blockHeader, 1},
		{"clean-mid-data", true, 1, 1},
		{"crash-whole-block-plus", false, -1, 2}, // cut a block and one byte of the one before
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			opts := testOpts(0)
			q, err := Open(dir, opts)
			if err != nil {
				t.Fatal(err)
			}
			ends := []int64{segHeaderSize} // where each block ends
			for b := range blocks {
				for i := range per {
					if err := q.Push(noise(b*per+i, size)); err != nil {
						t.Fatal(err)
					}
				}
				if err := q.Sync(); err != nil { // seals a block
					t.Fatal(err)
				}
				ends = append(ends, q.Bytes())
			}
			mustPop(t, q) // the head is not at the start
			if tc.clean {
				err = q.Close()
			} else {
				err = q.Sync()
				q.crashForTest()
			}
			if err != nil {
				t.Fatal(err)
			}
			files := segFiles(t, dir, queueExt)
			last := files[len(files)-1]
			full := ends[blocks]
			keep := full - int64(tc.cut)
			switch {
			case tc.cut == -1:
				keep = ends[blocks-1] - 1
			case tc.cut < 0:
				keep = ends[blocks-1] - int64(tc.cut)
			}
			if err := os.Truncate(last, keep); err != nil {
				t.Fatal(err)
			}
			q, err = Open(dir, opts)
			if err != nil {
				t.Fatal(err)
			}
			defer q.Close()
			rc := q.Recovery()
			if !rc.Dirty || rc.CutBytes == 0 {
				t.Errorf("Recovery = %+v, want a reported cut", rc)
			}
			if want := keep - ends[blocks-tc.lost]; rc.CutBytes != want {
				t.Errorf("CutBytes = %d, want %d", rc.CutBytes, want)
			}
			n := (blocks-tc.lost)*per - 1
			if q.Len() != int64(n) {
				t.Fatalf("Len = %d, want %d", q.Len(), n)
			}
			for i := 1; i <= n; i++ {
				if got := mustPop(t, q); !bytes.Equal(got, noise(i, size)) {
					t.Fatalf("record %d mismatch", i)
				}
			}
			if _, ok, err := q.Pop(nil); ok || err != nil {
				t.Fatalf("after the complete records: ok=%v err=%v", ok, err)
			}
			// The queue keeps working after the cut.
			if err := q.Push([]byte("after")); err != nil {
				t.Fatal(err)
			}
			if got := mustPop(t, q); string(got) != "after" {
				t.Fatalf("got %q", got)
			}
		})
	}
}

func TestQueueCrashOpenIsAtLeastOnce(t *testing.T) {
	dir := t.TempDir()
	opts := testOpts(4096)
	q, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		if err := q.Push(rec(i, 60)); err != nil {
			t.Fatal(err)
		}
	}
	for range 10 {
		mustPop(t, q)
	}
	if err := q.Sync(); err != nil { // records the head at 10
		t.Fatal(err)
	}
	for range 5 {
		mustPop(t, q)
	}
	q.crashForTest()
	if q, err = Open(dir, opts); err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	if !q.Recovery().Dirty || q.Recovery().CutBytes != 0 {
		t.Errorf("Recovery = %+v, want dirty without cut", q.Recovery())
	}
	if q.Len() != 90 {
		t.Fatalf("Len = %d, want 90 (the 5 popped after Sync come back)", q.Len())
	}
	if got := mustPop(t, q); !bytes.Equal(got, rec(10, 60)) {
		t.Fatalf("head = %q, want record 10", got[:4])
	}
}

func TestQueueCorruption(t *testing.T) {
	setup := func(t *testing.T) (string, Options) {
		dir := t.TempDir()
		opts := testOpts(4096)
		q, err := Open(dir, opts)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 200 { // blocks of 10 records, about 6 segments
			if err := q.Push(noise(i, 100)); err != nil {
				t.Fatal(err)
			}
			if i%10 == 9 {
				if err := q.Sync(); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := q.Close(); err != nil {
			t.Fatal(err)
		}
		return dir, opts
	}
	flip := func(t *testing.T, path string, off int64) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		b[off] ^= 0x40
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("checksum-on-pop", func(t *testing.T) {
		dir, opts := setup(t)
		first := segFiles(t, dir, queueExt)[0]
		flip(t, first, segHeaderSize+blockHeader+10*101+blockHeader+7) // data of block 1
		q, err := Open(dir, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer q.Close()
		for i := range 10 {
			if got := mustPop(t, q); !bytes.Equal(got, noise(i, 100)) {
				t.Fatal("mismatch before the corruption")
			}
		}
		_, ok, err := q.Pop(nil)
		if ok || !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "checksum mismatch") || !strings.Contains(err.Error(), filepath.Base(first)) {
			t.Fatalf("Pop of corrupt record: ok=%v err=%v", ok, err)
		}
		if _, _, err2 := q.Pop(nil); !errors.Is(err2, ErrCorrupt) {
			t.Fatalf("error not sticky: %v", err2)
		}
	})
	t.Run("bad-length-on-pop", func(t *testing.T) {
		dir, opts := setup(t)
		flip(t, segFiles(t, dir, queueExt)[0], segHeaderSize+3) // high byte of block 0's length
		q, err := Open(dir, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer q.Close()
		if _, _, err := q.Pop(nil); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("Pop = %v, want ErrCorrupt", err)
		}
	})
	t.Run("middle-segment-on-recovery", func(t *testing.T) {
		dir, opts := setup(t)
		os.Remove(filepath.Join(dir, queueMetaName)) // force a recovery scan
		flip(t, segFiles(t, dir, queueExt)[0], segHeaderSize+blockHeader+1)
		if _, err := Open(dir, opts); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("Open = %v, want ErrCorrupt", err)
		}
	})
	t.Run("segment-header", func(t *testing.T) {
		dir, opts := setup(t)
		flip(t, segFiles(t, dir, queueExt)[1], 2)
		if _, err := Open(dir, opts); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "magic") {
			t.Fatalf("Open = %v, want ErrCorrupt (bad magic)", err)
		}
	})
	t.Run("metadata", func(t *testing.T) {
		dir, opts := setup(t)
		flip(t, filepath.Join(dir, queueMetaName), 20)
		if _, err := Open(dir, opts); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("Open = %v, want ErrCorrupt", err)
		}
	})
}

func TestPositionMarshal(t *testing.T) {
	p := Position{Segment: 3, Offset: 100, Skip: 7, TailSegment: 9, TailOffset: 4000, Len: 12345}
	b, err := p.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var got Position
	if err := got.UnmarshalBinary(b); err != nil || got != p {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	for _, bad := range [][]byte{b[:10], append([]byte{}, b[:len(b)-1]...), func() []byte { c := bytes.Clone(b); c[5] ^= 1; return c }()} {
		if err := got.UnmarshalBinary(bad); !errors.Is(err, ErrCorrupt) {
			t.Errorf("UnmarshalBinary(%x) = %v, want ErrCorrupt", bad, err)
		}
	}
}

func TestQueueMarkOpenAt(t *testing.T) {
	dir := t.TempDir()
	opts := testOpts(4096)
	q, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 300 { // about 5 segments of 60-byte records
		if err := q.Push(noise(i, 60)); err != nil {
			t.Fatal(err)
		}
	}
	for range 20 {
		mustPop(t, q)
	}
	pos, err := q.Mark()
	if err != nil {
		t.Fatal(err)
	}
	if pos.Len != 280 {
		t.Fatalf("mark Len = %d", pos.Len)
	}
	// After the mark: pop across segment boundaries (which must not delete
	// what the mark needs) and push more.
	for range 200 {
		mustPop(t, q)
	}
	for i := 300; i < 500; i++ {
		if err := q.Push(noise(i, 60)); err != nil {
			t.Fatal(err)
		}
	}
	if err := q.Sync(); err != nil {
		t.Fatal(err)
	}
	q.crashForTest()

	b, _ := pos.MarshalBinary()
	var back Position
	if err := back.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	q, err = OpenAt(dir, back, opts)
	if err != nil {
		t.Fatal(err)
	}
	// The cut is the 200 records pushed after the mark (in blocks that do
	// not compress) plus the headers of the segments created for them.
	if rc := q.Recovery(); rc.CutBytes < 200*61 {
		t.Errorf("CutBytes = %d, want the 200 records pushed after the mark", rc.CutBytes)
	}
	if q.Len() != 280 {
		t.Fatalf("Len after OpenAt = %d, want 280", q.Len())
	}
	for i := 20; i < 150; i++ {
		if got := mustPop(t, q); !bytes.Equal(got, noise(i, 60)) {
			t.Fatalf("record %d mismatch", i)
		}
	}
	// A crash before the next checkpoint: the mark still works.
	q.crashForTest()
	if q, err = OpenAt(dir, pos, opts); err != nil {
		t.Fatal(err)
	}
	if q.Len() != 280 {
		t.Fatalf("Len after second OpenAt = %d", q.Len())
	}
	for range 250 {
		mustPop(t, q)
	}
	pos2, err := q.Mark()
	if err != nil {
		t.Fatal(err)
	}
	before := len(segFiles(t, dir, queueExt))
	if err := q.Release(pos); err != nil {
		t.Fatal(err)
	}
	after := len(segFiles(t, dir, queueExt))
	if after >= before {
		t.Errorf("Release kept all %d segments (now %d)", before, after)
	}
	if got := q.Marks(); len(got) != 1 || got[0] != pos2 {
		t.Errorf("Marks = %+v, want [%+v]", got, pos2)
	}
	// Marks survive a clean close.
	if err := q.Close(); err != nil {
		t.Fatal(err)
	}
	if q, err = Open(dir, opts); err != nil {
		t.Fatal(err)
	}
	if got := q.Marks(); len(got) != 1 || got[0] != pos2 {
		t.Errorf("Marks after reopen = %+v", got)
	}
	for range 30 {
		mustPop(t, q)
	}
	q.crashForTest()
	// The released mark is gone: OpenAt refuses it clearly.
	if _, err := OpenAt(dir, pos, opts); !errors.Is(err, ErrCorrupt) {
		t.Errorf("OpenAt(released) = %v, want ErrCorrupt", err)
	}
	if q, err = OpenAt(dir, pos2, opts); err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	if q.Len() != 30 {
		t.Fatalf("Len = %d, want 30", q.Len())
	}
	for i := 270; i < 300; i++ {
		if got := mustPop(t, q); !bytes.Equal(got, noise(i, 60)) {
			t.Fatalf("record %d mismatch", i)
		}
	}
}

func TestQueueConcurrent(t *testing.T) {
	q, err := Open(t.TempDir(), testOpts(8192))
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	const producers, per = 4, 500
	var wg sync.WaitGroup
	for p := range producers {
		wg.Go(func() {
			for i := range per {
				if err := q.Push(rec(p*per+i, 40)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	seen := make(map[string]bool)
	var mu sync.Mutex
	for range 2 {
		wg.Go(func() {
			for range producers * per {
				r, ok, err := q.Pop(nil)
				if err != nil {
					t.Error(err)
					return
				}
				if ok {
					mu.Lock()
					seen[string(r)] = true
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	for {
		r, ok, err := q.Pop(nil)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		seen[string(r)] = true
	}
	if len(seen) != producers*per {
		t.Errorf("saw %d distinct records, want %d", len(seen), producers*per)
	}
}

// A queue that runs near empty pops from its open block in RAM: records
// pushed and popped between two seals are never written, a seal writes
// only those not yet popped, and a mark taken then holds exactly those.
func TestQueuePopsFromTheOpenBlock(t *testing.T) {
	dir := t.TempDir()
	opts := testOpts(1 << 20)
	q, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	fileBytes := func() int64 {
		t.Helper()
		var n int64
		for _, f := range segFiles(t, dir, queueExt) {
			st, err := os.Stat(f)
			if err != nil {
				t.Fatal(err)
			}
			n += st.Size()
		}
		return n
	}
	empty := fileBytes()
	next := 0 // the next record expected at the head
	pop := func() {
		t.Helper()
		if got := mustPop(t, q); !bytes.Equal(got, rec(next, 60)) {
			t.Fatalf("pop %d = %q", next, got[:4])
		}
		next++
	}
	for i := range 1000 { // three queued at a time: the open block drops its popped head
		if err := q.Push(rec(i, 60)); err != nil {
			t.Fatal(err)
		}
		if i >= 3 {
			pop()
		}
	}
	for range 3 {
		pop()
	}
	if got := fileBytes(); got != empty {
		t.Fatalf("segment files grew from %d to %d bytes, though every record was popped from the open block", empty, got)
	}
	if q.Len() != 0 || q.Bytes() != empty {
		t.Fatalf("Len = %d, Bytes = %d, want 0 and %d", q.Len(), q.Bytes(), empty)
	}
	// Pops that reach the open block while sealed blocks are written.
	for i := 1000; i < 1200; i++ {
		if err := q.Push(rec(i, 60)); err != nil {
			t.Fatal(err)
		}
		if i%4 == 0 {
			pop()
		}
	}
	pos, err := q.Mark()
	if err != nil {
		t.Fatal(err)
	}
	if pos.Len != int64(1200-next) {
		t.Fatalf("mark's Len = %d, want %d", pos.Len, 1200-next)
	}
	for range 10 {
		mustPop(t, q)
	}
	q.crashForTest()
	if q, err = OpenAt(dir, pos, opts); err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	if q.Len() != pos.Len {
		t.Fatalf("Len after OpenAt = %d, want %d", q.Len(), pos.Len)
	}
	for ; next < 1200; next++ {
		if got := mustPop(t, q); !bytes.Equal(got, rec(next, 60)) {
			t.Fatalf("after OpenAt, pop %d = %q", next, got[:4])
		}
	}
	if _, ok, err := q.Pop(nil); ok || err != nil {
		t.Fatalf("Pop of an empty queue: ok=%v err=%v", ok, err)
	}
}
