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

// assignFile, in state/, holds the --assign policy the crawl directory
// was begun with, as --assign spells it, and a newline. The policy decides
// what is hashed into every per-key count key (counts), every seen URL's
// hash in the sieve (its group's slot) and the keys of the queued visit
// states, so a directory is resumed with that policy only: there is no
// reset that re-keys them, and another policy is refused with a usage
// error naming both. A directory whose state predates the file takes the
// policy of the first start that writes it.
const assignFile = "ASSIGN"

// checkAssign refuses to resume the crawl directory of state with a policy
// other than the one it was begun with, and marks a directory that has no
// policy yet with assign.
func checkAssign(state string, assign frontier.Assign) error {
	path := filepath.Join(state, assignFile)
	b, err := os.ReadFile(path)
	switch {
	case err == nil && strings.TrimSpace(string(b)) == assign.String():
		return nil
	case err == nil:
		was := strings.TrimSpace(string(b))
		return usageErr("crawl directory %s was begun with --assign %s, this run asks for --assign %s: its per-key counts and seen URLs are keyed by %s; resume it with --assign %s, or crawl into a new directory",
			filepath.Dir(state), was, assign, was, was)
	case !errors.Is(err, os.ErrNotExist):
		return usageErr("crawl directory: %v", err)
	}
	err = atomicfile.Write(path, atomicfile.Options{Sync: true}, func(w io.Writer) error {
		_, err := fmt.Fprintln(w, assign)
		return err
	})
	if err != nil {
		return usageErr("crawl directory: %v", err)
	}
	return nil
}
