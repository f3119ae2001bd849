package sieve

import "testing"

// TestURLCacheForget checks that a forgotten hash is reported new again,
// and that forgetting one hash leaves the others of its set.
func TestURLCacheForget(t *testing.T) {
	c := NewURLCache(64)       // two sets of four
	hs := []uint64{2, 4, 6, 8} // one set
	for _, h := range hs {
		if c.Seen(h) {
			t.Fatalf("%d seen before it was added", h)
		}
	}
	c.Forget(4)
	c.Forget(12345) // not held: no change
	for _, h := range hs {
		if want := h != 4; c.Holds(h) != want {
			t.Errorf("Holds(%d) = %v after Forget(4), want %v", h, !want, want)
		}
	}
	if c.Seen(4) {
		t.Error("a forgotten hash reported seen")
	}
	if !c.Seen(4) {
		t.Error("a hash added again after Forget not seen")
	}
}
