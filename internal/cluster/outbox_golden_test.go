package cluster

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files in testdata")

// outboxTrace writes, after each step of a scenario, the fsyncs made
// during it and the bytes each file of the outbox gained or lost, so that
// a golden file pins the log's format byte for byte and what is durable
// when.
type outboxTrace struct {
	t     *testing.T
	dir   string
	out   strings.Builder
	prev  map[string][]byte
	syncs []string
}

func (tr *outboxTrace) fsync(f *os.File) error {
	name, err := filepath.Rel(tr.dir, f.Name())
	if err != nil {
		name = f.Name()
	}
	tr.syncs = append(tr.syncs, name)
	return f.Sync()
}

func (tr *outboxTrace) step(op string, err error) {
	tr.t.Helper()
	if err != nil {
		tr.t.Fatalf("%s: %v", op, err)
	}
	fmt.Fprintf(&tr.out, "== %s\n", op)
	if len(tr.syncs) > 0 {
		fmt.Fprintf(&tr.out, "fsync %s\n", strings.Join(tr.syncs, ", "))
		tr.syncs = tr.syncs[:0]
	}
	names, _ := filepath.Glob(filepath.Join(tr.dir, "*"))
	now := map[string][]byte{}
	for _, p := range names {
		b, err := os.ReadFile(p)
		if err != nil {
			tr.t.Fatal(err)
		}
		name := filepath.Base(p)
		now[name] = b
		old := tr.prev[name]
		switch {
		case bytes.Equal(old, b) && old != nil:
			continue
		case bytes.HasPrefix(b, old):
			fmt.Fprintf(&tr.out, "%s +%d at %d\n", name, len(b)-len(old), len(old))
			for off := len(old); off < len(b); off += 32 {
				fmt.Fprintf(&tr.out, "    %x\n", b[off:min(off+32, len(b))])
			}
		default:
			fmt.Fprintf(&tr.out, "%s rewritten, %d bytes\n", name, len(b))
		}
	}
	for name := range tr.prev {
		if now[name] == nil {
			fmt.Fprintf(&tr.out, "%s removed\n", name)
		}
	}
	tr.prev = now
}

// TestOutboxFormatGolden pins the outbox log: the magic, put and ack
// frames, the fsyncs (one per PutAll, none per ack; a new segment's file
// and directory before a frame in it counts), the start of a segment and
// the removal of one whose batches were all acknowledged.
func TestOutboxFormatGolden(t *testing.T) {
	tr := &outboxTrace{t: t, dir: t.TempDir(), prev: map[string][]byte{}}
	ctx := context.Background()
	id := func(seq uint64) BatchID { return BatchID{Sender: "a1", Incarnation: 2, Seq: seq} }
	o, err := openOutbox(tr.dir, 1<<20, 80, tr.fsync)
	tr.step("open an empty outbox", err)
	tr.step("PutAll a2#1, a3#1", o.PutAll(ctx, []OutPut{
		{Dest: "a2", ID: id(1), Wire: []byte("wire-a2-1")},
		{Dest: "a3", ID: id(1), Wire: []byte("wire-a3-1")}}, true))
	tr.step("Put a2#2", o.Put(ctx, "a2", id(2), []byte("wire-a2-2"), true))
	es := o.Pending("a2", 1, nil)
	tr.step("Ack a2#1 (its frame waits for the next put)", o.Ack(es[0]))
	tr.step("Put a3#2 (the head is full: a new segment)", o.Put(ctx, "a3", id(2), []byte("wire-a3-2"), true))
	var err2 error
	for _, d := range []string{"a2", "a3"} {
		for _, e := range o.Pending(d, 10, nil) {
			if e.ID.Seq < 2 || d == "a2" {
				err2 = o.Ack(e)
			}
		}
	}
	tr.step("Ack a2#2, a3#1 (segment 1 holds nothing now)", err2)
	tr.step("Close", o.Close())
	o, err = openOutbox(tr.dir, 1<<20, 80, tr.fsync)
	tr.step("reopen", err)
	for _, d := range []string{"a2", "a3"} {
		for _, e := range o.Pending(d, 10, nil) {
			w, err := o.Read(e)
			fmt.Fprintf(&tr.out, "held for %s: %s %q %v\n", d, e.ID, w, err)
		}
	}
	o.Close()

	path := filepath.Join("testdata", "outbox_format.golden")
	if *updateGolden {
		if err := os.WriteFile(path, []byte(tr.out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	if got := tr.out.String(); got != string(want) {
		t.Errorf("the outbox's on-disk format changed; got:\n%s\nwant:\n%s", got, want)
	}
}
