package agent

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/petrel-crawler/petrel/internal/atomicfile"
	"github.com/petrel-crawler/petrel/internal/frontier"
)

// stateFormat is the content of state/FORMAT: the version of the per-URL
// records (frontier.Meta) kept in the sieve's files, the ready queue and
// the checkpoints of the directory.
var stateFormat = fmt.Sprintf("petrel-state meta=%d\n", frontier.MetaVersion)

// checkStateFormat refuses a crawl directory whose queued URLs this Petrel
// cannot read, and marks a new one with the current format. A directory
// with state but no FORMAT file was written before the records were
// versioned (three bytes of metadata): it is refused, not converted.
func checkStateFormat(state string) error {
	path := filepath.Join(state, "FORMAT")
	b, err := os.ReadFile(path)
	switch {
	case err == nil && string(b) == stateFormat:
		return nil
	case err == nil:
		return usageErr("crawl directory %s: its state is in format %q, this Petrel reads %q; finish that crawl with the Petrel that began it, or crawl into a new directory",
			filepath.Dir(state), strings.TrimSpace(string(b)), strings.TrimSpace(stateFormat))
	case !errors.Is(err, os.ErrNotExist):
		return usageErr("crawl directory: %v", err)
	}
	for _, d := range []string{"ready", "sieve", "checkpoints"} {
		if ents, err := os.ReadDir(filepath.Join(state, d)); err == nil && len(ents) > 0 {
			return usageErr("crawl directory %s holds the state of an earlier Petrel, whose queued URLs carry unversioned metadata this version does not read; finish that crawl with the Petrel that began it, or crawl into a new directory",
				filepath.Dir(state))
		}
	}
	if err := atomicfile.Write(path, atomicfile.Options{Sync: true}, func(w io.Writer) error { _, err := io.WriteString(w, stateFormat); return err }); err != nil {
		return usageErr("crawl directory: %v", err)
	}
	return nil
}
