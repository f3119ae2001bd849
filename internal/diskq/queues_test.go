package diskq

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// queuesModel is the in-memory model of a Queues.
type queuesModel map[uint64][][]byte

func (md queuesModel) total() int64 {
	var n int64
	for _, q := range md {
		n += int64(len(q))
	}
	return n
}

func checkQueues(t *testing.T, m *Queues, md queuesModel) {
	t.Helper()
	if m.Total() != md.total() {
		t.Fatalf("Total = %d, want %d", m.Total(), md.total())
	}
	for id, q := range md {
		if m.Count(id) != int64(len(q)) {
			t.Fatalf("Count(%d) = %d, want %d", id, m.Count(id), len(q))
		}
	}
}

func TestQueuesModel(t *testing.T) {
	cases := []struct {
		name   string
		ids    int
		seg    int64
		maxLen int
		ops    int
	}{
		{"many-ids-small-segments", 300, 4096, 80, 20000},
		{"few-ids-large-records", 5, 8192, 6000, 2000},
		{"one-id", 1, 4096, 100, 5000},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			opts := testOpts(tc.seg)
			rng := rand.New(rand.NewPCG(7, uint64(tc.ids)))
			m, err := OpenQueues(dir, opts)
			if err != nil {
				t.Fatal(err)
			}
			md := queuesModel{}
			next := 0
			var maxDisk, maxLive int64
			for op := 0; op < tc.ops; op++ {
				id := uint64(rng.IntN(tc.ids)) * 0x9e3779b97f4a7c15 // spread ids
				switch r := rng.IntN(1000); {
				case r < 520:
					b := rec(next, rng.IntN(tc.maxLen+1))
					next++
					if err := m.Enqueue(id, b); err != nil {
						t.Fatal(err)
					}
					md[id] = append(md[id], b)
				case r < 900:
					got, ok, err := m.Dequeue(id, nil)
					if err != nil {
						t.Fatalf("op %d: %v", op, err)
					}
					if ok != (len(md[id]) > 0) {
						t.Fatalf("op %d: Dequeue ok=%v, model has %d", op, ok, len(md[id]))
					}
					if ok {
						if !bytes.Equal(got, md[id][0]) {
							t.Fatalf("op %d: Dequeue(%d) mismatch", op, id)
						}
						md[id] = md[id][1:]
					}
				case r < 980:
					k := rng.IntN(20) + 1
					got, err := m.DequeueN(id, k)
					if err != nil {
						t.Fatalf("op %d: %v", op, err)
					}
					if want := min(k, len(md[id])); len(got) != want {
						t.Fatalf("op %d: DequeueN returned %d, want %d", op, len(got), want)
					}
					for i, g := range got {
						if !bytes.Equal(g, md[id][i]) {
							t.Fatalf("op %d: DequeueN record %d mismatch", op, i)
						}
					}
					md[id] = md[id][len(got):]
				case r < 990:
					dropped, err := m.Remove(id)
					if err != nil {
						t.Fatal(err)
					}
					if dropped != int64(len(md[id])) {
						t.Fatalf("Remove = %d, want %d", dropped, len(md[id]))
					}
					delete(md, id)
				case r < 995:
					if err := m.Compact(); err != nil {
						t.Fatal(err)
					}
				default:
					if err := m.Close(); err != nil {
						t.Fatal(err)
					}
					if m, err = OpenQueues(dir, opts); err != nil {
						t.Fatal(err)
					}
					if rc := m.Recovery(); rc != (Recovery{}) {
						t.Fatalf("clean reopen reported %+v", rc)
					}
				}
				if op%500 == 0 {
					checkQueues(t, m, md)
				}
				var live int64
				for _, q := range md {
					for _, b := range q {
						live += int64(len(b) + 2)
					}
				}
				maxLive = max(maxLive, live)
				maxDisk = max(maxDisk, m.DiskBytes())
			}
			checkQueues(t, m, md)
			// Drain everything, in FIFO order per id.
			for id, q := range md {
				for len(q) > 0 {
					got, err := m.DequeueN(id, 7)
					if err != nil {
						t.Fatal(err)
					}
					for _, g := range got {
						if !bytes.Equal(g, q[0]) {
							t.Fatalf("drain %d mismatch", id)
						}
						q = q[1:]
					}
				}
			}
			if m.Total() != 0 || m.Len() != 0 {
				t.Fatalf("after drain Total=%d Len=%d", m.Total(), m.Len())
			}
			if n := len(segFiles(t, dir, queuesExt)); n > 1 {
				t.Errorf("%d segment files after drain, want 1", n)
			}
			t.Logf("max disk %d bytes for max live %d bytes, %d compactions", maxDisk, maxLive, m.compactions)
			if limit := 2*maxLive + 3*opts.SegmentBytes + int64(tc.maxLen); maxDisk > limit {
				t.Errorf("disk use %d exceeds 2×live + 3 segments = %d", maxDisk, limit)
			}
			if tc.ids > 100 && m.compactions == 0 {
				t.Error("no compaction happened")
			}
			if err := m.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestQueuesCompaction fills many ids in interleaved order, then drains
// most ids: disk use must follow the live records down, through deletion
// and compaction, and the survivors must come back intact.
func TestQueuesCompaction(t *testing.T) {
	dir := t.TempDir()
	opts := testOpts(8192)
	m, err := OpenQueues(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	const ids, per = 100, 100
	for i := range per {
		for id := range uint64(ids) {
			if err := m.Enqueue(id, rec(i, 60)); err != nil {
				t.Fatal(err)
			}
		}
	}
	full := m.DiskBytes()
	// Keep ids 0..4: every segment keeps 5% live records.
	for id := uint64(5); id < ids; id++ {
		if _, err := m.DequeueN(id, per); err != nil {
			t.Fatal(err)
		}
	}
	live := int64(5 * per * (60 + 2))
	if m.compactions == 0 {
		t.Error("no compaction happened")
	}
	if d := m.DiskBytes(); d > 2*live+3*opts.SegmentBytes {
		t.Errorf("DiskBytes = %d after draining 95%% (full %d, live %d): not reclaimed", d, full, live)
	}
	for id := range uint64(5) {
		for i := range per {
			got, ok, err := m.Dequeue(id, nil)
			if err != nil || !ok || !bytes.Equal(got, rec(i, 60)) {
				t.Fatalf("id %d record %d: ok=%v err=%v", id, i, ok, err)
			}
		}
	}
	if n := len(segFiles(t, dir, queuesExt)); n > 1 {
		t.Errorf("%d segments left after drain", n)
	}
}

func TestQueuesRemove(t *testing.T) {
	m, err := OpenQueues(t.TempDir(), testOpts(4096))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for i := range 200 {
		for id := range uint64(3) {
			if err := m.Enqueue(id, rec(i, 50)); err != nil {
				t.Fatal(err)
			}
		}
	}
	cases := []struct {
		id   uint64
		want int64
	}{{1, 200}, {1, 0}, {42, 0}}
	for _, c := range cases {
		if got, err := m.Remove(c.id); err != nil || got != c.want {
			t.Errorf("Remove(%d) = %d, %v; want %d", c.id, got, err, c.want)
		}
	}
	if m.Total() != 400 || m.Count(1) != 0 || m.Count(0) != 200 {
		t.Fatalf("Total=%d Count(0)=%d Count(1)=%d", m.Total(), m.Count(0), m.Count(1))
	}
	if _, ok, _ := m.Dequeue(1, nil); ok {
		t.Error("Dequeue of removed id returned a record")
	}
	if _, err := m.Remove(0); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Remove(2); err != nil {
		t.Fatal(err)
	}
	if d := m.DiskBytes(); d > 4096 {
		t.Errorf("DiskBytes = %d after removing everything", d)
	}
}

func TestQueuesCrashRebuild(t *testing.T) {
	for _, cut := range []int{0, 3, 20, 200} {
		dir := t.TempDir()
		opts := testOpts(4096)
		m, err := OpenQueues(dir, opts)
		if err != nil {
			t.Fatal(err)
		}
		const n = 300
		for i := range n {
			if err := m.Enqueue(uint64(i%7), rec(i, 60)); err != nil {
				t.Fatal(err)
			}
		}
		if err := m.Sync(); err != nil {
			t.Fatal(err)
		}
		m.crashForTest()
		files := segFiles(t, dir, queuesExt)
		last := files[len(files)-1]
		st, _ := os.Stat(last)
		if err := os.Truncate(last, st.Size()-int64(cut)); err != nil {
			t.Fatal(err)
		}
		if m, err = OpenQueues(dir, opts); err != nil {
			t.Fatal(err)
		}
		rc := m.Recovery()
		if !rc.Rebuilt || (cut > 0) != (rc.CutBytes > 0) || (cut == 0) != (rc.Records == n) || rc.Records == 0 {
			t.Errorf("cut %d: Recovery = %+v, want rebuilt with %d records, fewer if cut", cut, rc, n)
		}
		// What comes back is, for every id, a prefix of its records in
		// FIFO order: the torn block held the last ones sealed.
		got := int64(0)
		for id := range uint64(7) {
			for i := int(id); i < n; i += 7 {
				r, ok, err := m.Dequeue(id, nil)
				if err != nil {
					t.Fatalf("cut %d: id %d record %d: %v", cut, id, i, err)
				}
				if !ok {
					break
				}
				if !bytes.Equal(r, rec(i, 60)) {
					t.Fatalf("cut %d: id %d: got record %q, want %d", cut, id, r[:4], i)
				}
				got++
			}
		}
		if got != rc.Records || m.Total() != 0 {
			t.Errorf("cut %d: %d records dequeued, %d left, recovery found %d", cut, got, m.Total(), rc.Records)
		}
		m.Close()
	}
}

func TestQueuesCorruption(t *testing.T) {
	setup := func(t *testing.T) (string, Options) {
		dir := t.TempDir()
		opts := testOpts(4096)
		m, err := OpenQueues(dir, opts)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 2000 {
			if err := m.Enqueue(uint64(i/100), rec(i, 60)); err != nil {
				t.Fatal(err)
			}
		}
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
		return dir, opts
	}
	flip := func(t *testing.T, path string, off int64) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		b[off] ^= 0x10
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("record-data", func(t *testing.T) {
		dir, opts := setup(t)
		first := segFiles(t, dir, queuesExt)[0]
		flip(t, first, segHeaderSize+blockHeader+10) // the first block: id 0's first records
		m, err := OpenQueues(dir, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		if _, _, err := m.Dequeue(0, nil); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "checksum") {
			t.Fatalf("Dequeue = %v, want checksum ErrCorrupt", err)
		}
		if _, err := m.DequeueN(0, 3); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("DequeueN = %v, want ErrCorrupt", err)
		}
		if got, ok, err := m.Dequeue(1, nil); err != nil || !ok || !bytes.Equal(got, rec(100, 60)) {
			t.Fatalf("other queue: ok=%v err=%v", ok, err)
		}
	})
	t.Run("index", func(t *testing.T) {
		dir, opts := setup(t)
		flip(t, filepath.Join(dir, queuesIndexName), 30)
		if _, err := OpenQueues(dir, opts); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("OpenQueues = %v, want ErrCorrupt", err)
		}
	})
	t.Run("middle-segment-on-rebuild", func(t *testing.T) {
		dir, opts := setup(t)
		os.Remove(filepath.Join(dir, queuesIndexName))
		if n := len(segFiles(t, dir, queuesExt)); n < 2 {
			t.Fatalf("%d segment, want a middle one", n)
		}
		flip(t, segFiles(t, dir, queuesExt)[0], segHeaderSize+blockHeader+1)
		if _, err := OpenQueues(dir, opts); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("OpenQueues = %v, want ErrCorrupt", err)
		}
	})
}

func TestQueuesConcurrent(t *testing.T) {
	m, err := OpenQueues(t.TempDir(), testOpts(8192))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			id := uint64(g)
			for i := range 400 {
				if err := m.Enqueue(id, rec(i, 50)); err != nil {
					t.Error(err)
					return
				}
				if i%3 == 2 {
					got, err := m.DequeueN(id, 2)
					if err != nil || len(got) != 2 {
						t.Errorf("DequeueN: %d, %v", len(got), err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	for g := range uint64(4) {
		if m.Count(g) != 400-2*133 {
			t.Errorf("Count(%d) = %d", g, m.Count(g))
		}
	}
}

// TestQueuesPeek checks that Peek returns a queue's records in order and
// leaves them in place.
func TestQueuesPeek(t *testing.T) {
	m, err := OpenQueues(t.TempDir(), Options{SegmentBytes: 4096, BufferBytes: 512})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for i := 0; i < 300; i++ {
		if err := m.Enqueue(uint64(i%3), []byte(fmt.Sprintf("rec-%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	for pass := 0; pass < 2; pass++ {
		recs, err := m.Peek(1)
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != 100 || string(recs[0]) != "rec-1" || string(recs[99]) != "rec-298" {
			t.Fatalf("pass %d: Peek gave %d records (%q...)", pass, len(recs), recs[0])
		}
	}
	if m.Count(1) != 100 || m.Total() != 300 {
		t.Fatalf("Peek consumed records: count %d total %d", m.Count(1), m.Total())
	}
	got, err := m.DequeueN(1, 2)
	if err != nil || string(got[0]) != "rec-1" || string(got[1]) != "rec-4" {
		t.Fatalf("DequeueN after Peek: %q, %v", got, err)
	}
}

// TestQueuesSnapshot checks that Snapshot returns every live record once,
// in FIFO order within each queue, across segments, consuming nothing.
func TestQueuesSnapshot(t *testing.T) {
	m, err := OpenQueues(t.TempDir(), Options{SegmentBytes: 4096, BufferBytes: 512})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	want := map[uint64][]string{}
	for i := 0; i < 2000; i++ {
		id := uint64(i % 7)
		r := fmt.Sprintf("rec-%d", i)
		if err := m.Enqueue(id, []byte(r)); err != nil {
			t.Fatal(err)
		}
		want[id] = append(want[id], r)
	}
	// Consume some, so that the snapshot starts mid-queue.
	for id := uint64(0); id < 7; id++ {
		if _, err := m.DequeueN(id, 10); err != nil {
			t.Fatal(err)
		}
		want[id] = want[id][10:]
	}
	got := map[uint64][]string{}
	if err := m.Snapshot(func(id uint64, rec []byte) error {
		got[id] = append(got[id], string(rec))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for id, w := range want {
		g := got[id]
		if len(g) != len(w) {
			t.Fatalf("queue %d: %d records in the snapshot, want %d", id, len(g), len(w))
		}
		for i := range w {
			if g[i] != w[i] {
				t.Fatalf("queue %d record %d: %q, want %q", id, i, g[i], w[i])
			}
		}
	}
	if m.Total() != 2000-70 {
		t.Fatalf("Snapshot consumed records: total %d", m.Total())
	}
}
