package cluster

import "testing"

func TestDecodedCache(t *testing.T) {
	c := newDecodedCache(10)
	b := func(n int) *Batch { return &Batch{Records: [][]byte{make([]byte, n)}} }
	c.put(b(4), 0, 100)
	c.put(b(4), 100, 250)
	c.put(b(4), 250, 300) // over the limit: not kept
	if c.has(250) {
		t.Error("a batch over the limit was kept")
	}
	if _, next, ok := c.take(0); !ok || next != 100 {
		t.Errorf("take(0) = %d, %v", next, ok)
	}
	if _, _, ok := c.take(0); ok {
		t.Error("a batch was taken twice")
	}
	c.put(b(4), 250, 300) // room again
	c.dropBefore(250)     // the one at 100 was read from the inbox
	if c.has(100) || !c.has(250) || c.bytes != 4 {
		t.Errorf("after dropBefore: has(100) %v, has(250) %v, bytes %d", c.has(100), c.has(250), c.bytes)
	}
}
