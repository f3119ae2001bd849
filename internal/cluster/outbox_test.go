package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func outID(seq uint64) BatchID { return BatchID{Sender: "me", Incarnation: 1, Seq: seq} }

// TestOutboxHeldWire checks that the outbox sends a batch it wrote from
// memory (the log is not read back) within heldPerDest, from the log
// beyond, and releases the memory at the acknowledgement.
func TestOutboxHeldWire(t *testing.T) {
	o, err := OpenOutbox(t.TempDir(), 64<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	small := bytes.Repeat([]byte("s"), 1000)
	big := bytes.Repeat([]byte("b"), heldPerDest)
	ctx := context.Background()
	for i, w := range [][]byte{small, big} {
		if err := o.Put(ctx, "peer", outID(uint64(i+1)), w, true); err != nil {
			t.Fatal(err)
		}
	}
	es := o.Pending("peer", 2, nil)
	if len(es) != 2 {
		t.Fatalf("%d pending", len(es))
	}
	if es[0].wire == nil || es[1].wire != nil {
		t.Errorf("held in memory: small %v, big %v; want only the small one", es[0].wire != nil, es[1].wire != nil)
	}
	for i, want := range [][]byte{small, big} {
		if w, err := o.Read(es[i]); err != nil || !bytes.Equal(w, want) {
			t.Errorf("batch %d read back wrong: %v", i+1, err)
		}
	}
	for _, e := range es {
		o.Ack(e)
	}
	if q := o.queue("peer"); q.held != 0 || q.bytes != 0 || q.records != 0 || len(q.entries) != 0 {
		t.Errorf("after the acks: held %d, bytes %d, %d records, %d entries", q.held, q.bytes, q.records, len(q.entries))
	}
}

// TestOutboxGroupCommit checks that batches put at once share fsyncs: one
// PutAll of many batches, and many goroutines putting at once.
func TestOutboxGroupCommit(t *testing.T) {
	o, err := OpenOutbox(t.TempDir(), 64<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	ctx := context.Background()
	before := o.Syncs()
	var puts []OutPut
	for i := range 20 {
		puts = append(puts, OutPut{Dest: fmt.Sprintf("a%d", i%3), ID: outID(uint64(i + 1)), Wire: testBatch(uint64(i + 1))})
	}
	if err := o.PutAll(ctx, puts, true); err != nil {
		t.Fatal(err)
	}
	if got := o.Syncs() - before; got != 1 {
		t.Errorf("one PutAll of 20 batches made %d fsyncs, want 1", got)
	}
	before = o.Syncs()
	var wg sync.WaitGroup
	const writers, each = 8, 50
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				seq := uint64(1000 + w*each + i)
				if err := o.Put(ctx, "a0", outID(seq), testBatch(seq), true); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if got := o.Syncs() - before; got >= writers*each {
		t.Errorf("%d concurrent puts made %d fsyncs: no group commit", writers*each, got)
	}
	if b, _ := o.Len(); b != 20+writers*each {
		t.Errorf("%d batches held, want %d", b, 20+writers*each)
	}
}

// TestOutboxBoundedLog checks that the log stays bounded when one
// destination never acknowledges while another does (compaction), that
// fully acknowledged segments go, and that a reopen finds exactly the
// batches not acknowledged, under their ids, and counts their records.
func TestOutboxBoundedLog(t *testing.T) {
	dir := t.TempDir()
	const seg = 16 << 10
	noSync := func(*os.File) error { return nil } // what is durable when is not the point here
	o, err := openOutbox(dir, 1<<30, seg, noSync)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	stuck := map[uint64]bool{}
	for seq := uint64(1); seq <= 1000; seq++ {
		dest := "fast"
		if seq%10 == 0 {
			dest = "slow"
			stuck[seq] = true
		}
		if err := o.Put(ctx, dest, outID(seq), testBatch(seq), true); err != nil {
			t.Fatal(err)
		}
		if dest == "fast" {
			for _, e := range o.Pending("fast", 10, nil) {
				if err := o.Ack(e); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	_, held := o.Len()
	var size int64
	files, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	for _, f := range files {
		st, _ := os.Stat(f)
		size += st.Size()
	}
	if bound := 2*held + 5*seg; size > bound {
		t.Errorf("the log takes %d bytes in %d segments for %d held: over %d", size, len(files), held, bound)
	}
	if o.compactions == 0 {
		t.Error("no compaction")
	}
	if got, want := o.Records(), int64(50*len(stuck)); got != want { // testBatch: 50 records
		t.Errorf("%d records held, want %d", got, want)
	}
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	o, err = openOutbox(dir, 1<<30, seg, noSync)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	if es := o.Pending("fast", 10, nil); len(es) != 0 {
		t.Errorf("acknowledged batches came back: %v", es)
	}
	es := o.Pending("slow", 1<<20, nil)
	if len(es) != len(stuck) {
		t.Fatalf("%d batches for the slow agent after the reopen, want %d", len(es), len(stuck))
	}
	if got, want := o.Records(), int64(50*len(stuck)); got != want {
		t.Errorf("%d records held after the reopen, want %d", got, want)
	}
	for i, e := range es {
		w, err := o.Read(e)
		if err != nil {
			t.Fatal(err)
		}
		b, err := DecodeBatch(w)
		if err != nil || e.ID != outID(b.ID.Seq) || !stuck[e.ID.Seq] || i > 0 && es[i-1].ID.Seq >= e.ID.Seq {
			t.Fatalf("batch %d: %v (id %v)", i, err, e.ID)
		}
	}
}

// TestOutboxRefusesFilesFormat checks that an outbox of a file per
// batch, the format before the log, stops the open with a message
// instead of being read as empty.
func TestOutboxRefusesFilesFormat(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "peer", fmt.Sprintf("%020d-%020d.b", 1, 7))
	if err := writeDurable(p, testBatch(7)); err != nil {
		t.Fatal(err)
	}
	_, err := OpenOutbox(dir, 0)
	if err == nil || !strings.Contains(err.Error(), "earlier build") {
		t.Fatalf("open of the earlier format: %v", err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Errorf("the earlier format's batch is gone: %v", err)
	}
}

// TestOutboxTornEnd checks that a frame cut by a kill at the end of the
// log is dropped at open, and that a corrupt frame before the last
// segment is an error naming it.
func TestOutboxTornEnd(t *testing.T) {
	dir := t.TempDir()
	o, err := OpenOutbox(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for seq := uint64(1); seq <= 3; seq++ {
		if err := o.Put(ctx, "peer", outID(seq), testBatch(seq), true); err != nil {
			t.Fatal(err)
		}
	}
	o.Close()
	seg := filepath.Join(dir, fmt.Sprintf("%020d.log", 1))
	st, _ := os.Stat(seg)
	if err := os.Truncate(seg, st.Size()-5); err != nil {
		t.Fatal(err)
	}
	if o, err = OpenOutbox(dir, 0); err != nil {
		t.Fatal(err)
	}
	if es := o.Pending("peer", 10, nil); len(es) != 2 || es[1].ID.Seq != 2 {
		t.Fatalf("after a torn end: %+v", es)
	}
	if err := o.Put(ctx, "peer", outID(4), testBatch(4), true); err != nil {
		t.Fatal(err)
	}
	o.Close()
	// The same damage in a segment that is not the last is corruption.
	if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%020d.log", 2)), []byte(outboxMagic), 0o644); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(seg)
	b[len(b)-3] ^= 0xff
	os.WriteFile(seg, b, 0o644)
	if _, err := OpenOutbox(dir, 0); err == nil {
		t.Fatal("a corrupt frame in an earlier segment was accepted")
	} else {
		t.Log(err)
	}
}

// TestOutboxCloseWakesWaiters: a put waiting for room in a full
// destination returns ErrClosed when the outbox closes, instead of
// holding the stop for ever.
func TestOutboxCloseWakesWaiters(t *testing.T) {
	o, err := OpenOutbox(t.TempDir(), 1024)
	if err != nil {
		t.Fatal(err)
	}
	wire := make([]byte, 1000)
	if err := o.Put(context.Background(), "b", BatchID{Sender: "a", Incarnation: 1, Seq: 1}, wire, true); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		done <- o.Put(context.Background(), "b", BatchID{Sender: "a", Incarnation: 1, Seq: 2}, wire, true)
	}()
	select {
	case err := <-done:
		t.Fatalf("a put into a full destination returned at once: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	o.Close()
	select {
	case err := <-done:
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("the waiting put returned %v, want ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not wake the put waiting for room")
	}
}
