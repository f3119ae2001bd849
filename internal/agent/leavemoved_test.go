package agent

import (
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/petrel-crawler/petrel/internal/cluster"
	"github.com/petrel-crawler/petrel/internal/framelog"
)

// The golden logs of a leave's moved URLs, both holding a frame of two
// batches (wire-a to agent1, wire-b to agent3) and a frame of one (ccc to
// agent1): the first version (uvarint length, body, CRC-32C), which is
// refused, and this one (magic, frames of package framelog). Both were
// computed apart from the code, with an independent CRC-32C.
const (
	movedLogV1Golden = "1c066167656e743106776972652d61066167656e7433" + "06776972652d62" + "15fe4bab" +
		"0b066167656e7431036363630743fefd"
	movedLogV2Golden = "504c4d4f564544320a" + "1c00000015fe4bab066167656e743106776972652d61066167656e7433" +
		"06776972652d62" + "0b0000000743fefd066167656e743103636363"
)

var movedGoldenFrames = [][]cluster.OutPut{
	{{Dest: "agent1", Wire: []byte("wire-a")}, {Dest: "agent3", Wire: []byte("wire-b")}},
	{{Dest: "agent1", Wire: []byte("ccc")}},
}

// readMovedFile reads the log at path as a start does, returning its
// batches and the length of its whole frames.
func readMovedFile(t *testing.T, path string) (int64, []cluster.OutPut) {
	t.Helper()
	var got []cluster.OutPut
	n, err := readMovedLog(path, func(body []byte) error {
		return movedBatches(body, func(p cluster.OutPut) error { got = append(got, p); return nil })
	})
	if err != nil {
		t.Fatal(err)
	}
	return n, got
}

// TestMovedLogGolden pins the log of a leave's moved URLs byte for byte,
// reads it back, refuses a log of the first version and takes one
// killed as it was started as absent; a torn or corrupt last frame is
// left out of the length read (the log is cut there).
func TestMovedLogGolden(t *testing.T) {
	var b []byte
	b = append(b, movedMagic...)
	for _, f := range movedGoldenFrames {
		b = framelog.Append(b, movedBody(f))
	}
	if got := hex.EncodeToString(b); got != movedLogV2Golden {
		t.Fatalf("format changed:\n got %s\nwant %s", got, movedLogV2Golden)
	}
	path := filepath.Join(t.TempDir(), movedLogFile)
	v1, _ := hex.DecodeString(movedLogV1Golden)
	whole := int64(len(movedMagic) + framelog.HeaderLen + len(movedBody(movedGoldenFrames[0])))
	for _, c := range []struct {
		name string
		file []byte
		n    int64
		urls int
	}{
		{"whole", b, int64(len(b)), 3},
		{"cut short", b[:len(b)-1], whole, 2},
		{"cut in the header", b[:whole+3], whole, 2},
		{"corrupt", append(b[:len(b)-2:len(b)-2], 'x', 'x'), whole, 2},
	} {
		os.WriteFile(path, c.file, 0o644)
		n, got := readMovedFile(t, path)
		if n != c.n || len(got) != c.urls || got[1].Dest != "agent3" || string(got[1].Wire) != "wire-b" || c.urls == 3 && string(got[2].Wire) != "ccc" {
			t.Errorf("%s: length %d (want %d), batches %v", c.name, n, c.n, got)
		}
	}
	os.WriteFile(path, v1, 0o644)
	if _, err := readMovedLog(path, func([]byte) error { return nil }); err == nil {
		t.Error("a log of the first version was read")
	}
	// Killed as it was started: no whole magic, no frame. Absent.
	for _, short := range []string{"", movedMagic[:4]} {
		os.WriteFile(path, []byte(short), 0o644)
		if _, err := readMovedLog(path, func([]byte) error { return nil }); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("a log of %q: %v, want it absent", short, err)
		}
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Errorf("a log of %q was not removed: %v", short, err)
		}
	}
}

// TestMovedLogClosed: once closed, the log refuses to log more and keeps
// what it holds (it is not started again, which would empty it).
func TestMovedLogClosed(t *testing.T) {
	path := filepath.Join(t.TempDir(), movedLogFile)
	var m movedLog
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.append(path, movedBody(movedGoldenFrames[0])); err != nil {
		t.Fatal(err)
	}
	if err := m.w.Close(); err != nil {
		t.Fatal(err)
	}
	m.w, m.shut = nil, true
	if err := m.append(path, movedBody(movedGoldenFrames[1])); err == nil {
		t.Fatal("a closed log took a frame")
	}
	if _, got := readMovedFile(t, path); len(got) != 2 {
		t.Fatalf("%d batches read back, want the 2 logged before the close", len(got))
	}
}
