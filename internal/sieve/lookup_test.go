package sieve

import (
	"fmt"
	"testing"
)

type nopRecv struct{}

func (nopRecv) PrepareToAppend() error      { return nil }
func (nopRecv) Append(uint64, []byte) error { return nil }
func (nopRecv) FinishedAppending() error    { return nil }
func (nopRecv) NoMoreAppend() error         { return nil }

// TestContains finds keys buffered in RAM, keys in the store after a flush
// (open and closed sieve), and not keys never enqueued.
func TestContains(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, nopRecv{}, Options{BufferKeys: 1 << 12, KeyPrefix: 3})
	if err != nil {
		t.Fatal(err)
	}
	key := func(i int) []byte { return []byte(fmt.Sprintf("m%02dhttp://h%d.test/p%d", i%7, i%13, i)) }
	for i := 0; i < 20000; i++ {
		if _, err := s.Enqueue(key(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	s.Enqueue(key(30000))
	for _, i := range []int{0, 1, 9999, 19999, 30000} {
		found, _, _, err := s.Contains(key(i))
		if err != nil || !found {
			t.Errorf("Contains(%s) = %v, %v; want true", key(i), found, err)
		}
	}
	// The prefix is not hashed: another meta, the same URL.
	if found, _, _, _ := s.Contains(append([]byte("zzz"), key(5)[3:]...)); !found {
		t.Error("Contains depends on the key prefix")
	}
	if found, buffered, _, _ := s.Contains(key(30000)); !found || !buffered {
		t.Errorf("a key enqueued after the flush: found %v buffered %v", found, buffered)
	}
	for _, i := range []int{20000, 40000} {
		if found, _, _, _ := s.Contains(key(i)); found {
			t.Errorf("Contains(%s) = true for a key never enqueued", key(i))
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{0, 12345, 30000} {
		if found, aux, err := ContainsDir(dir, key(i), Options{KeyPrefix: 3}); err != nil || !found || aux {
			t.Errorf("ContainsDir(%s) = %v, aux %v, %v", key(i), found, aux, err)
		}
	}
	if found, _, _ := ContainsDir(dir, key(20001), Options{KeyPrefix: 3}); found {
		t.Error("ContainsDir found a key never enqueued")
	}
}
