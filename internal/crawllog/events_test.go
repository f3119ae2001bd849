package crawllog

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEventLogRotates: 30 MB of records written to an event log bounded to
// 64 KiB files and 256 KiB in all leave numbered files of at most 64 KiB,
// at most 256 KiB together, the newest record kept, and a reopened log
// going on with the next number.
func TestEventLogRotates(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	const maxFile, maxTotal = 64 << 10, 256 << 10
	l, err := OpenEventLog(path, maxFile, maxTotal)
	if err != nil {
		t.Fatal(err)
	}
	record := func(i int) string {
		return fmt.Sprintf(`{"msg":"console: refused","n":%d,"host":"%s"}`+"\n", i, strings.Repeat("h", 15000))
	}
	n := 30 << 20 / len(record(0))
	for i := 0; i < n; i++ {
		if _, err := l.Write([]byte(record(i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil || l.Err() != nil {
		t.Fatal(err, l.Err())
	}
	files := Files(path)
	var total int64
	for _, f := range files {
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() > maxFile {
			t.Errorf("%s holds %d bytes, past the file bound %d", f, fi.Size(), maxFile)
		}
		total += fi.Size()
	}
	if total > maxTotal || len(files) < 3 {
		t.Errorf("%d files, %d bytes in all: want several, at most %d bytes", len(files), total, maxTotal)
	}
	last, _ := os.ReadFile(files[len(files)-1])
	if !strings.HasSuffix(string(last), record(n-1)) {
		t.Error("the newest record is not at the end of events.jsonl")
	}
	l, err = OpenEventLog(path, maxFile, maxTotal)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		l.Write([]byte(record(n + i)))
	}
	l.Close()
	again := Files(path)
	if a, b := again[len(again)-2], files[len(files)-2]; a == b {
		t.Errorf("no new rotated file after the reopen: last rotated %s", a)
	}
}
