package agent

import (
	"bytes"
	"testing"

	"github.com/petrel-crawler/petrel/internal/cluster"
)

// TestMovedLogFrames checks that the log of a leave's moved URLs gives back
// its frames' batches in order, and stops at a torn or corrupt last frame,
// reporting the length of the whole frames before it (the log is cut there).
func TestMovedLogFrames(t *testing.T) {
	f1 := []cluster.OutPut{{Dest: "agent1", Wire: []byte("wire-a")}, {Dest: "agent3", Wire: []byte("wire-b")}}
	f2 := []cluster.OutPut{{Dest: "agent1", Wire: bytes.Repeat([]byte("c"), 300)}}
	log := appendMovedFrame(nil, f1)
	whole := len(log)
	log = appendMovedFrame(log, f2)
	read := func(b []byte) (int, []cluster.OutPut) {
		t.Helper()
		var got []cluster.OutPut
		n, err := readMovedLog(b, func(p cluster.OutPut) error { got = append(got, p); return nil })
		if err != nil {
			t.Fatal(err)
		}
		return n, got
	}
	if n, got := read(log); n != len(log) || len(got) != 3 || got[1].Dest != "agent3" || string(got[1].Wire) != "wire-b" || len(got[2].Wire) != 300 {
		t.Fatalf("whole log: length %d of %d, batches %v", n, len(log), got)
	}
	for _, cut := range []int{len(log) - 1, whole + 3, whole + 1} {
		if n, got := read(log[:cut]); n != whole || len(got) != 2 {
			t.Errorf("log cut at %d: length %d (want %d), %d batches (want 2)", cut, n, whole, len(got))
		}
	}
	bad := bytes.Clone(log)
	bad[len(bad)-10] ^= 0xff // in the second frame's body: its CRC no longer matches
	if n, got := read(bad); n != whole || len(got) != 2 {
		t.Errorf("corrupt last frame: length %d (want %d), %d batches (want 2)", n, whole, len(got))
	}
}
