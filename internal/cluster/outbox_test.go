package cluster

import (
	"bytes"
	"context"
	"os"
	"testing"
)

// TestOutboxHeldWire checks that the outbox sends a batch it wrote from
// memory (its file is not read back) within heldPerDest, from its file
// beyond, and releases the memory at the acknowledgement.
func TestOutboxHeldWire(t *testing.T) {
	o, err := OpenOutbox(t.TempDir(), 64<<20)
	if err != nil {
		t.Fatal(err)
	}
	small := bytes.Repeat([]byte("s"), 1000)
	big := bytes.Repeat([]byte("b"), heldPerDest)
	ctx := context.Background()
	for i, w := range [][]byte{small, big} {
		if err := o.Put(ctx, "peer", BatchID{Sender: "me", Incarnation: 1, Seq: uint64(i + 1)}, w, true); err != nil {
			t.Fatal(err)
		}
	}
	es := o.Pending("peer", 2, nil)
	if len(es) != 2 {
		t.Fatalf("%d pending", len(es))
	}
	for _, e := range es {
		if err := os.Remove(e.Path); err != nil {
			t.Fatal(err)
		}
	}
	if w, err := o.Read(es[0]); err != nil || !bytes.Equal(w, small) {
		t.Errorf("the small batch was not kept in memory: %v", err)
	}
	if _, err := o.Read(es[1]); err == nil {
		t.Error("a batch over heldPerDest was kept in memory")
	}
	for _, e := range es {
		o.Ack(e)
	}
	if q := o.queue("peer"); q.held != 0 || q.bytes != 0 || len(q.entries) != 0 {
		t.Errorf("after the acks: held %d, bytes %d, %d entries", q.held, q.bytes, len(q.entries))
	}
}
