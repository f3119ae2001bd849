package cluster

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
)

// TestInboxRollsUnderConcurrentAppends appends from several goroutines
// at once across many segment rolls (real fsyncs): an append that waited
// for the fsync under way while another rolled the log must not fsync the
// segment that one closed, and every batch reads back once.
func TestInboxRollsUnderConcurrentAppends(t *testing.T) {
	const writers, each = 8, 96
	in, err := OpenInbox(t.TempDir(), 2<<20) // 256 KiB segments
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	wire := bytes.Repeat([]byte("x"), 2<<10)
	concurrently(t, writers, each, func(int, int) error {
		_, err := in.Append(wire)
		return err
	})
	n := 0
	if err := in.Read(0, func([]byte, int64) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	if n != writers*each {
		t.Fatalf("read back %d batches, want %d", n, writers*each)
	}
}

// TestOutboxRollsUnderConcurrentPuts is the same for the outbox's log.
func TestOutboxRollsUnderConcurrentPuts(t *testing.T) {
	const writers, each = 8, 100
	o, err := openOutbox(t.TempDir(), 1<<30, 16<<10, (*os.File).Sync)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	concurrently(t, writers, each, func(w, i int) error {
		seq := uint64(w*each + i + 1)
		return o.Put(context.Background(), fmt.Sprintf("d%d", w), outID(seq), testBatch(seq), true)
	})
	if b, _ := o.Len(); b != writers*each {
		t.Fatalf("the outbox holds %d batches, want %d", b, writers*each)
	}
}

// concurrently runs fn(w, i) for i < each in each of writers goroutines,
// reporting a writer's first error and stopping it.
func concurrently(t *testing.T, writers, each int, fn func(w, i int) error) {
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				if err := fn(w, i); err != nil {
					t.Errorf("writer %d, write %d: %v", w, i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
}
