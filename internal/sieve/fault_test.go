package sieve

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func keysN(prefix string, n int) []string {
	ks := make([]string, n)
	for i := range ks {
		ks[i] = fmt.Sprintf("%s/%05d", prefix, i)
	}
	return ks
}

func enqueueAll(t *testing.T, s Sieve, ks []string) {
	t.Helper()
	for _, k := range ks {
		if _, err := s.Enqueue([]byte(k)); err != nil {
			t.Fatal(err)
		}
	}
}

// storeState is the manifest bytes plus the names and contents of the store
// files, to check that a failed flush left the store untouched.
func storeState(t *testing.T, dir string) string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, e := range ents {
		if e.Name() == manifestName || strings.HasSuffix(e.Name(), ".sv") {
			data, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "%s:%x\n", e.Name(), data)
		}
	}
	return b.String()
}

func TestFlushFaults(t *testing.T) {
	errDisk := errors.New("injected: no space left on device")
	cases := []struct {
		name  string
		hooks testHooks
		recv  func(r *recorder)
	}{
		{"write error mid-merge", testHooks{midMerge: func(int) error { return errDisk }}, nil},
		{"manifest write error", testHooks{beforeManifest: func() error { return errDisk }}, nil},
		{"receiver Append error", testHooks{}, func(r *recorder) { r.failAt = 50 }},
		{"receiver FinishedAppending error", testHooks{}, func(r *recorder) { r.failDone = errDisk }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			opts := Options{BufferKeys: 1000, Buckets: 4, Logger: quietLogger()}
			// A committed first batch.
			rec := newRecorder(t)
			s, err := open(dir, rec, opts, testHooks{})
			if err != nil {
				t.Fatal(err)
			}
			first := keysN("a", 300)
			enqueueAll(t, s, first)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			before := storeState(t, dir)

			// The faulty flush.
			rec = newRecorder(t)
			if tc.recv != nil {
				tc.recv(rec)
			}
			s, err = open(dir, rec, opts, tc.hooks)
			if err != nil {
				t.Fatal(err)
			}
			second := keysN("b", 200)
			enqueueAll(t, s, first[:100]) // old keys
			enqueueAll(t, s, second)
			if err := s.Flush(); err == nil {
				t.Fatal("Flush succeeded despite the fault")
			}
			if _, err := s.Enqueue([]byte("later")); err == nil {
				t.Fatal("Enqueue after a failed flush succeeded")
			}
			if err := s.Close(); err == nil {
				t.Fatal("Close after a failed flush returned nil")
			}
			if len(rec.flows) != 0 {
				t.Fatalf("a failed flush committed %d flows", len(rec.flows))
			}
			if after := storeState(t, dir); after != before {
				t.Fatal("failed flush changed the committed store")
			}

			// Reopening replays the failed batch: exactly the new keys, once, in order.
			rec = newRecorder(t)
			s, err = open(dir, rec, opts, testHooks{})
			if err != nil {
				t.Fatal(err)
			}
			enqueueAll(t, s, first)
			enqueueAll(t, s, second)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if got := rec.keys(); !slices.Equal(got, second) {
				t.Fatalf("after reopen got %d keys (%.3q...), want the %d keys of the failed batch", len(got), got, len(second))
			}
		})
	}
}

func TestCorruptStoreAtOpen(t *testing.T) {
	build := func(t *testing.T, compressed bool) string {
		dir := t.TempDir()
		s, err := Open(dir, newRecorder(t), Options{BufferKeys: 5000, Buckets: 2, Compressed: compressed, Logger: quietLogger()})
		if err != nil {
			t.Fatal(err)
		}
		enqueueAll(t, s, keysN("k", 20000))
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	storeFile := func(t *testing.T, dir string) string {
		m, _ := filepath.Glob(filepath.Join(dir, "b001-*.sv"))
		if len(m) != 1 {
			t.Fatalf("store files: %v", m)
		}
		return m[0]
	}
	cases := []struct {
		name   string
		damage func(t *testing.T, dir string)
	}{
		{"flipped byte in a block", func(t *testing.T, dir string) {
			p := storeFile(t, dir)
			data, _ := os.ReadFile(p)
			data[len(data)/2] ^= 0x40
			os.WriteFile(p, data, 0o644)
		}},
		{"flipped byte in the header", func(t *testing.T, dir string) {
			p := storeFile(t, dir)
			data, _ := os.ReadFile(p)
			data[17] ^= 1
			os.WriteFile(p, data, 0o644)
		}},
		{"truncated store file", func(t *testing.T, dir string) {
			p := storeFile(t, dir)
			st, _ := os.Stat(p)
			os.Truncate(p, st.Size()-100)
		}},
		{"missing store file", func(t *testing.T, dir string) { os.Remove(storeFile(t, dir)) }},
		{"corrupt manifest", func(t *testing.T, dir string) {
			p := filepath.Join(dir, manifestName)
			data, _ := os.ReadFile(p)
			data[20] ^= 1
			os.WriteFile(p, data, 0o644)
		}},
		{"truncated manifest", func(t *testing.T, dir string) { os.Truncate(filepath.Join(dir, manifestName), 30) }},
		{"missing manifest", func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, manifestName)) }},
		{"garbage aux file", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, auxFileName(99)), []byte{0xff, 0xff, 0xff, 0xff, 0x0f}, 0o644)
		}},
	}
	for _, compressed := range []bool{false, true} {
		for _, tc := range cases {
			t.Run(fmt.Sprintf("%s/compressed=%v", tc.name, compressed), func(t *testing.T) {
				dir := build(t, compressed)
				tc.damage(t, dir)
				rec := newRecorder(t)
				s, err := Open(dir, rec, Options{Logger: quietLogger()})
				if err == nil {
					s.Close()
					t.Fatalf("Open succeeded on a damaged store; %d keys re-emitted", len(rec.keys()))
				}
				if tc.name != "missing store file" && !errors.Is(err, ErrCorrupt) {
					t.Fatalf("Open error %v does not wrap ErrCorrupt", err)
				}
				if len(rec.keys()) != 0 {
					t.Fatal("keys emitted from a damaged store")
				}
			})
		}
	}
}

func TestReplayPartialAux(t *testing.T) {
	dir := t.TempDir()
	// An aux file as left by a crash: two whole records and a partial one.
	var aux bytes.Buffer
	for _, k := range []string{"x/1", "x/2"} {
		aux.WriteByte(byte(len(k)))
		aux.WriteString(k)
	}
	aux.Write([]byte{10, 'x', '/'})
	if err := os.WriteFile(filepath.Join(dir, auxFileName(5)), aux.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	rec := newRecorder(t)
	s, err := Open(dir, rec, Options{BufferKeys: 10, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	if got := rec.keys(); !slices.Equal(got, []string{"x/1", "x/2"}) {
		t.Fatalf("replayed %q", got)
	}
	enqueueAll(t, s, []string{"x/2", "x/3"})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if got := rec.keys(); !slices.Equal(got, []string{"x/1", "x/2", "x/3"}) {
		t.Fatalf("got %q", got)
	}
}

func TestCheckpoint(t *testing.T) {
	dir, dst := t.TempDir(), filepath.Join(t.TempDir(), "snap")
	rec := newRecorder(t)
	s, err := Open(dir, rec, Options{BufferKeys: 64, Buckets: 8, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	a, b := keysN("a", 500), keysN("b", 500)
	enqueueAll(t, s, a)
	if err := s.Checkpoint(dst); err != nil {
		t.Fatal(err)
	}
	enqueueAll(t, s, b)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// The live store moved on, and removed files it replaced; the checkpoint
	// still holds exactly the state after a.
	rec2 := newRecorder(t)
	s2, err := Open(dst, rec2, Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	enqueueAll(t, s2, a)
	enqueueAll(t, s2, b)
	if err := s2.Close(); err != nil {
		t.Fatal(err)
	}
	if got := rec2.keys(); !slices.Equal(got, b) {
		t.Fatalf("checkpoint reopened: got %d keys, want the %d of b", len(got), len(b))
	}
	if st := s2.Stats(); st.StoredKeys != 1000 {
		t.Fatalf("StoredKeys %d", st.StoredKeys)
	}
}

func TestEnqueueRejectsHugeKey(t *testing.T) {
	s, err := Open(t.TempDir(), newRecorder(t), Options{BufferKeys: 4, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Enqueue(make([]byte, MaxKeyLen+1)); err == nil {
		t.Fatal("huge key accepted")
	}
	if _, err := NewMemory(newRecorder(t)).Enqueue(make([]byte, MaxKeyLen+1)); err == nil {
		t.Fatal("huge key accepted by Memory")
	}
}

func TestFlushedReport(t *testing.T) {
	s, err := Open(t.TempDir(), newRecorder(t), Options{BufferKeys: 3, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var got []bool
	for _, k := range keysN("f", 7) {
		f, err := s.Enqueue([]byte(k))
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, f)
	}
	if want := []bool{false, false, true, false, false, true, false}; !slices.Equal(got, want) {
		t.Fatalf("flushed = %v, want %v", got, want)
	}
}

// TestCheckpointPending: a checkpoint taken without a flush holds the
// committed store and the pending keys; reopened, it delivers the pending
// keys that are new (once, in arrival order), then nothing the store or
// they hold again.
func TestCheckpointPending(t *testing.T) {
	dir, dst := t.TempDir(), filepath.Join(t.TempDir(), "snap")
	rec := newRecorder(t)
	s, err := Open(dir, rec, Options{BufferKeys: 64, Buckets: 8, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	a, b, c := keysN("a", 500), keysN("b", 40), keysN("c", 300)
	enqueueAll(t, s, a)
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	pending := append(slices.Clone(b), a[:10]...) // b new, a[:10] already stored
	enqueueAll(t, s, pending)
	delivered := len(rec.keys())
	if err := s.CheckpointPending(dst); err != nil {
		t.Fatal(err)
	}
	if len(rec.keys()) != delivered {
		t.Fatal("CheckpointPending delivered keys (it must not flush)")
	}
	enqueueAll(t, s, c)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	rec2 := newRecorder(t)
	s2, err := Open(dst, rec2, Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	if got := rec2.keys(); !slices.Equal(got, b) {
		t.Fatalf("reopened checkpoint replayed %d keys, want the %d of b", len(got), len(b))
	}
	enqueueAll(t, s2, a)
	enqueueAll(t, s2, b)
	enqueueAll(t, s2, c)
	if err := s2.Close(); err != nil {
		t.Fatal(err)
	}
	if got := rec2.keys(); !slices.Equal(got, append(slices.Clone(b), c...)) {
		t.Fatalf("after the checkpoint: got %d keys, want b then c (%d)", len(got), len(b)+len(c))
	}
	// A checkpoint of a sieve with nothing pending is its store.
	s3, err := Open(t.TempDir(), newRecorder(t), Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	if err := s3.CheckpointPending(filepath.Join(t.TempDir(), "empty")); err != nil {
		t.Fatal(err)
	}
	s3.Close()
}
