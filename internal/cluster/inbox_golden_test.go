package cluster

import (
	"encoding/hex"
	"os"
	"testing"

	"github.com/petrel-crawler/petrel/internal/framelog"
)

// inboxGolden is the first segment after the batches "wire-1" and
// "wire-22": framelog frames without a header (computed apart from the
// code, with an independent CRC-32C).
const inboxGolden = "0600000061c11101776972652d31" + "070000002ec3ee24776972652d3232"

// TestInboxFormatGolden pins the inbox's segment byte for byte, and a
// torn frame at its end cut at the next open, the positions after it
// going on from the whole frames.
func TestInboxFormatGolden(t *testing.T) {
	dir := t.TempDir()
	in, err := OpenInbox(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"wire-1", "wire-22"} {
		if _, err := in.Append([]byte(w)); err != nil {
			t.Fatal(err)
		}
	}
	in.Close()
	path := framelog.SegmentPath(dir, 0)
	b, _ := os.ReadFile(path)
	if got := hex.EncodeToString(b); got != inboxGolden {
		t.Fatalf("the inbox's format changed:\n got %s\nwant %s", got, inboxGolden)
	}
	os.WriteFile(path, append(b, 9, 0, 0, 0, 1), 0o644)
	in, err = OpenInbox(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	if next, err := in.Append([]byte("x")); err != nil || next != int64(len(b))+framelog.HeaderLen+1 {
		t.Fatalf("append after a torn frame: next %d, %v", next, err)
	}
	var got []string
	if err := in.Read(0, func(w []byte, _ int64) error { got = append(got, string(w)); return nil }); err != nil || len(got) != 3 || got[2] != "x" {
		t.Fatalf("read back %q, %v", got, err)
	}
}
