package agent

import (
	"bytes"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDigestFilterFile(t *testing.T) {
	saved := newTextDigests()
	for i := range 1000 {
		saved.seen([16]byte{byte(i), byte(i >> 8), 7})
	}
	cases := []struct {
		name    string
		damage  func(path string) error
		loaded  bool // the saved digests are back
		warning bool
	}{
		{"whole", func(string) error { return nil }, true, false},
		{"missing", os.Remove, false, false},
		{"flipped byte", func(p string) error {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			b[len(b)/2] ^= 0x40
			return os.WriteFile(p, b, 0o644)
		}, false, true},
		{"truncated", func(p string) error { return os.Truncate(p, 1000) }, false, true},
		{"empty", func(p string) error { return os.Truncate(p, 0) }, false, true},
		// Older formats are dropped once, with a warning.
		{"bare filter of the first format", func(p string) error {
			return os.WriteFile(p, bytes.Repeat([]byte{0, 0, 0, 0, 0, 0, 1, 0}, 200), 0o644)
		}, false, true},
		{"PDIGEST1 framing", func(p string) error {
			return os.WriteFile(p, append([]byte("PDIGEST1"), make([]byte, 2000)...), 0o644)
		}, false, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "text-digests")
			if err := saveDigestFilter(path, saved.writeTo); err != nil {
				t.Fatal(err)
			}
			if err := c.damage(path); err != nil {
				t.Fatal(err)
			}
			var logBuf strings.Builder
			log := slog.New(slog.NewTextHandler(&logBuf, nil))
			got := newTextDigests()
			if err := loadDigestFilter(path, got.readFrom, log); err != nil {
				t.Fatalf("load: %v", err)
			}
			if back := got.seen([16]byte{5, 0, 7}); back != c.loaded {
				t.Errorf("digest saved before: seen %v, want %v", back, c.loaded)
			}
			if warned := strings.Contains(logBuf.String(), "digest filter not loaded"); warned != c.warning {
				t.Errorf("warning logged %v, want %v: %s", warned, c.warning, logBuf.String())
			}
		})
	}
}

// TestDigestFilterReadError checks that a whole file whose filter cannot be
// read is an error, not a silent empty filter.
func TestDigestFilterReadError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := saveDigestFilter(path, func(w io.Writer) error { _, err := w.Write([]byte("x")); return err }); err != nil {
		t.Fatal(err)
	}
	err := loadDigestFilter(path, newTextDigests().readFrom, slog.New(slog.DiscardHandler))
	if err == nil {
		t.Fatal("a whole file holding no filter loaded without error")
	}
}
