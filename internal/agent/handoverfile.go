package agent

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/petrel-crawler/petrel/internal/atomicfile"
	"github.com/petrel-crawler/petrel/internal/frontier"
)

// The keys' hand-over state (frontier.HandoverKey, handoverkeys.go there)
// is saved in a file "handovers": in a checkpoint's folder, as of its
// pause, and in state/ at a clean stop; a crash recovery puts the
// checkpoint's in state/ (or removes the one there if the checkpoint has
// none), and Open gives it to the frontier. The file has the framing of
// the todo file with the magic "PHOVER1\n", a frontier.AppendHandoverKey
// record per key (testdata/handovers.golden). It is written only when
// some key has a hand-over state: a crawl of one agent has none.

const (
	handoversFile  = "handovers"
	handoversMagic = "PHOVER1\n"
)

// encodeHandovers is the content of a handovers file (nil for no keys).
func encodeHandovers(keys []frontier.HandoverKey) []byte {
	if len(keys) == 0 {
		return nil
	}
	recs := make([][]byte, len(keys))
	for i, k := range keys {
		recs[i] = frontier.AppendHandoverKey(nil, k)
	}
	return appendRecordsFile(nil, handoversMagic, recs)
}

// writeHandovers writes the handovers file at path, or removes it when
// there are no keys.
func writeHandovers(path string, keys []frontier.HandoverKey) error {
	b := encodeHandovers(keys)
	if b == nil {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	return atomicfile.WriteBytes(path, b, atomicfile.Options{Sync: true})
}

// loadHandovers reads a handovers file (none: nil).
func loadHandovers(path string) ([]frontier.HandoverKey, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	recs, err := parseRecordsFile(b, handoversMagic)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	keys := make([]frontier.HandoverKey, len(recs))
	for i, r := range recs {
		if keys[i], err = frontier.ParseHandoverKey(r); err != nil {
			return nil, fmt.Errorf("%s: record %d: %w", filepath.Base(path), i, err)
		}
	}
	return keys, nil
}

// CheckpointHandovers keeps the keys' hand-over state for the checkpoint's
// handovers file, written after the pause.
func (s *checkpointSink) CheckpointHandovers(keys []frontier.HandoverKey) error {
	s.handovers = keys
	return nil
}

// restoreHandovers puts a checkpoint's handovers file in state/ (crash
// recovery), or removes the one there if the checkpoint has none.
func restoreHandovers(cpDir, state string) error {
	src, dst := filepath.Join(cpDir, handoversFile), filepath.Join(state, handoversFile)
	if _, err := os.Stat(src); errors.Is(err, os.ErrNotExist) {
		if err := os.Remove(dst); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	return copyFile(src, dst)
}
