package agent

import (
	"log/slog"

	"github.com/petrel-crawler/petrel/internal/store"
)

// loadPrior reads the earlier crawl's index named by --dedup-index: the
// store's Prior (store.NoPrior without one). A path that cannot be read
// is a usage error.
func loadPrior(s store.Settings, log *slog.Logger) (store.Prior, error) {
	if s.DedupIndex == "" {
		return store.NoPrior{}, nil
	}
	x, err := store.LoadDedupIndex(s.DedupIndex, s.DedupMax, log)
	if err != nil {
		return nil, usageErr("--dedup-index: %v", err)
	}
	st := x.Stats
	log.Info("dedup index loaded", "path", s.DedupIndex, "files", st.Files, "lines", st.Lines,
		"captures", st.Captures, "malformed", st.Malformed, "skipped", st.Skipped, "left_out", st.LeftOut,
		"bytes", x.Bytes())
	return x, nil
}
