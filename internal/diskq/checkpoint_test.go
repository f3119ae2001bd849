package diskq

import (
	"bytes"
	"errors"
	"hash/crc32"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
)

// TestQueuesCheckpoint: a checkpoint holds exactly the records queued when
// it was taken (read in file order: FIFO per queue but for records a
// compaction moved, so compared as sets), however the live queues change
// afterwards (dequeues, new records, removals, compactions, close); the
// checkpoint's files never change; the live queues go on unaffected.
func TestQueuesCheckpoint(t *testing.T) {
	dir := t.TempDir()
	opts := testOpts(8192)
	m, err := OpenQueues(filepath.Join(dir, "live"), opts)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	md := queuesModel{}
	next := 0
	enqueue := func(k int) {
		for range k {
			id := uint64(1 + rng.IntN(20))
			r := rec(next, 10+rng.IntN(120))
			next++
			if err := m.Enqueue(id, r); err != nil {
				t.Fatal(err)
			}
			md[id] = append(md[id], r)
		}
	}
	dequeue := func(k int) {
		for range k {
			id := uint64(1 + rng.IntN(20))
			got, err := m.DequeueN(id, 1+rng.IntN(8))
			if err != nil {
				t.Fatal(err)
			}
			for _, g := range got {
				if !bytes.Equal(g, md[id][0]) {
					t.Fatalf("queue %d: dequeued a record out of order", id)
				}
				md[id] = md[id][1:]
			}
		}
	}
	enqueue(2000)
	dequeue(300)
	cps := []string{filepath.Join(dir, "cp1"), filepath.Join(dir, "cp2")}
	var want []queuesModel
	// The indexes are written after the queues moved on, the second while
	// they change (as the agent writes them once its pause is over).
	var finished sync.WaitGroup
	var finishErr error
	for i, cp := range cps {
		fin, err := m.Checkpoint(cp)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, cloneModel(md))
		if i == 0 {
			enqueue(1500)
			dequeue(500)
			if err := fin(); err != nil {
				t.Fatal(err)
			}
			continue
		}
		finished.Go(func() { finishErr = fin() })
		enqueue(1500)
		dequeue(500)
	}
	sums := dirSums(t, cps[0])
	if _, err := m.Remove(3); err != nil {
		t.Fatal(err)
	}
	delete(md, 3)
	dequeue(2000)
	if err := m.Compact(); err != nil {
		t.Fatal(err)
	}
	if m.compactions == 0 {
		t.Fatal("no compaction ran: the test does not cover one")
	}
	enqueue(500)
	finished.Wait()
	if finishErr != nil {
		t.Fatal(finishErr)
	}
	checkQueues(t, m, md)
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	for i, cp := range cps {
		c, err := OpenCheckpoint(cp, opts)
		if err != nil {
			t.Fatal(err)
		}
		got := queuesModel{}
		if err := c.Snapshot(func(id uint64, r []byte) error {
			got[id] = append(got[id], bytes.Clone(r))
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if c.Total() != want[i].total() {
			t.Errorf("checkpoint %d: Total = %d, want %d", i, c.Total(), want[i].total())
		}
		for id, q := range want[i] {
			if c.Count(id) != int64(len(q)) || len(got[id]) != len(q) {
				t.Fatalf("checkpoint %d queue %d: Count %d, read %d, want %d", i, id, c.Count(id), len(got[id]), len(q))
			}
			g, w := slices.Clone(got[id]), slices.Clone(q)
			slices.SortFunc(g, bytes.Compare)
			slices.SortFunc(w, bytes.Compare)
			for k := range w {
				if !bytes.Equal(g[k], w[k]) {
					t.Fatalf("checkpoint %d queue %d: records differ", i, id)
				}
			}
		}
		c.Close()
	}
	if after := dirSums(t, cps[0]); !maps.Equal(sums, after) {
		t.Errorf("the checkpoint's files changed: %v, then %v", sums, after)
	}
	// The live queues reopen with what the model holds.
	m, err = OpenQueues(filepath.Join(dir, "live"), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	checkQueues(t, m, md)
}

// TestQueuesCheckpointDamaged: a checkpoint with a segment missing or
// without its index is refused.
func TestQueuesCheckpointDamaged(t *testing.T) {
	dir := t.TempDir()
	opts := testOpts(4096)
	m, err := OpenQueues(filepath.Join(dir, "live"), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for i := range 300 {
		if err := m.Enqueue(uint64(i%7), noise(i, 100)); err != nil {
			t.Fatal(err)
		}
	}
	cp := filepath.Join(dir, "cp")
	fin, err := m.Checkpoint(cp)
	if err == nil {
		err = fin()
	}
	if err != nil {
		t.Fatal(err)
	}
	segs := segFiles(t, cp, queuesExt)
	if len(segs) < 3 {
		t.Fatalf("%d segments in the checkpoint, want several", len(segs))
	}
	os.Remove(segs[1])
	if _, err := OpenCheckpoint(cp, opts); !errors.Is(err, ErrCorrupt) {
		t.Errorf("OpenCheckpoint without a segment = %v, want ErrCorrupt", err)
	}
	os.Remove(filepath.Join(cp, queuesIndexName))
	if _, err := OpenCheckpoint(cp, opts); !errors.Is(err, ErrCorrupt) {
		t.Errorf("OpenCheckpoint without an index = %v, want ErrCorrupt", err)
	}
}

func cloneModel(md queuesModel) queuesModel {
	c := queuesModel{}
	for id, q := range md {
		if len(q) > 0 {
			c[id] = slices.Clone(q)
		}
	}
	return c
}

func dirSums(t *testing.T, dir string) map[string]uint32 {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]uint32{}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = crc32.ChecksumIEEE(b)
	}
	return out
}
