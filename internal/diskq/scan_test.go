package diskq

import (
	"bytes"
	"sync"
	"testing"
)

// TestQueueScan: Scan sees the records from the head to the tail, the
// write buffer's included, in order, consuming none; it stops when asked;
// it runs while records are popped and pushed.
func TestQueueScan(t *testing.T) {
	q, err := Open(t.TempDir(), testOpts(4096))
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	for i := 0; i < 1000; i++ {
		if err := q.Push(rec(i, 40+i%50)); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 300; i++ {
		if _, _, err := q.Pop(nil); err != nil {
			t.Fatal(err)
		}
	}
	i := 300
	err = q.Scan(func(r []byte) bool {
		if !bytes.Equal(r, rec(i, 40+i%50)) {
			t.Fatalf("record %d differs", i)
		}
		i++
		return true
	})
	if err != nil || i != 1000 || q.Len() != 700 {
		t.Fatalf("Scan: %v, saw up to %d, Len %d", err, i, q.Len())
	}
	n := 0
	if err := q.Scan(func([]byte) bool { n++; return n < 5 }); err != nil || n != 5 {
		t.Fatalf("early stop: %v after %d", err, n)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for j := 0; j < 500; j++ {
			if _, _, err := q.Pop(nil); err != nil {
				t.Error(err)
				return
			}
			if err := q.Push(rec(j, 30)); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for k := 0; k < 5; k++ {
		if err := q.Scan(func([]byte) bool { return true }); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
}
