package agent

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStateFormat: a new directory is marked, a marked one accepted, and
// the state of an earlier Petrel (no FORMAT, or another one) refused with
// a usage error saying what to do.
func TestStateFormat(t *testing.T) {
	state := t.TempDir()
	if err := checkStateFormat(state); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(state, "FORMAT")); string(b) != stateFormat {
		t.Fatalf("FORMAT = %q", b)
	}
	if err := checkStateFormat(state); err != nil {
		t.Fatal(err)
	}

	old := t.TempDir()
	if err := os.MkdirAll(filepath.Join(old, "ready"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(old, "ready", "seg-0"), []byte("x"), 0o644)
	err := checkStateFormat(old)
	if !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), "earlier Petrel") {
		t.Fatalf("old state: %v", err)
	}
	os.WriteFile(filepath.Join(old, "FORMAT"), []byte("petrel-state meta=9\n"), 0o644)
	if err := checkStateFormat(old); !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), "meta=9") {
		t.Fatalf("other format: %v", err)
	}
	if _, err := parseTodo([]byte("PTODO1\n\x00\x00\x00\x00\x00")); err == nil || !strings.Contains(err.Error(), "earlier Petrel") {
		t.Fatalf("PTODO1 todo: %v", err)
	}
}
