package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

func TestWriteReplacesWhole(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	for _, opts := range []Options{{}, {Sync: true, SyncDir: true}, {Buffer: 4}} {
		if err := WriteBytes(p, []byte("first version"), opts); err != nil {
			t.Fatal(err)
		}
		boom := errors.New("boom")
		err := Write(p, opts, func(w io.Writer) error {
			w.Write([]byte("half"))
			return boom
		})
		if !errors.Is(err, boom) {
			t.Fatalf("%+v: error %v, want the writer's", opts, err)
		}
		if b, _ := os.ReadFile(p); string(b) != "first version" {
			t.Errorf("%+v: failed write changed the file: %q", opts, b)
		}
		if _, err := os.Stat(p + ".tmp"); !os.IsNotExist(err) {
			t.Errorf("%+v: temporary left behind: %v", opts, err)
		}
	}
}

func TestFsyncHookAndFailure(t *testing.T) {
	dir := t.TempDir()
	var synced []string
	fail := errors.New("disk on fire")
	hook := func(f *os.File) error {
		synced = append(synced, filepath.Base(f.Name()))
		if filepath.Base(f.Name()) == filepath.Base(dir) {
			return fail
		}
		return nil
	}
	err := WriteBytes(filepath.Join(dir, "g"), []byte("x"), Options{Sync: true, SyncDir: true, Fsync: hook})
	if !errors.Is(err, fail) {
		t.Errorf("directory sync failure not returned: %v", err)
	}
	if len(synced) != 2 || synced[0] != "g.tmp" {
		t.Errorf("synced %q, want the temporary then the directory", synced)
	}
	if err := SyncDir(dir); err != nil {
		t.Error(err)
	}
	if err := SyncDir(filepath.Join(dir, "missing")); err == nil {
		t.Error("missing directory synced")
	}
}
