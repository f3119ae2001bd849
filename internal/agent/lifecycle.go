package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/petrel-crawler/petrel/internal/atomicfile"
	"github.com/petrel-crawler/petrel/internal/stats"
)

// completeFile marks a crawl directory whose crawl ended with nothing left
// to fetch.
const completeFile = "COMPLETE"

// CompleteError is returned by Open for a crawl directory whose crawl is
// complete: running it again would fetch nothing.
type CompleteError struct {
	Dir   string
	Pages int64
}

func (e *CompleteError) Error() string {
	return fmt.Sprintf("the crawl in %s is complete (%d pages); to start another crawl, give a new --dir", e.Dir, e.Pages)
}

// checkComplete returns a CompleteError if dir holds a complete crawl.
func checkComplete(dir string) error {
	if _, err := os.Stat(filepath.Join(dir, "state", completeFile)); err != nil {
		return nil
	}
	var snap stats.Snapshot
	if b, err := os.ReadFile(filepath.Join(dir, "state", "stats.json")); err == nil {
		json.Unmarshal(b, &snap)
	}
	return &CompleteError{Dir: dir, Pages: snap["Fetched"]}
}

// holdsCrawl reports whether dir holds the state of an earlier run.
func holdsCrawl(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "state", "ready"))
	return err == nil
}

// runEnd is how Run ended.
type runEnd struct {
	err      error
	stopped  bool // the context was cancelled: a stop
	elapsed  time.Duration
	closeErr error // from closeAll
}

// storeFailed ends the run once the WARC writer has failed (a full disk):
// its error is sticky, so every page fetched after it would be lost. The
// run then fails with err; the close keeps state/RUNNING, and the next
// start recovers from the last checkpoint, which no failure of the writer
// preceded (see checkpoint), and fetches again what was not stored.
func (a *Agent) storeFailed(err error) {
	if !a.storeErr.CompareAndSwap(nil, &err) {
		return
	}
	if stop := a.stopOnStoreErr.Load(); stop != nil {
		(*stop)()
	}
}

// storeFailure is the error storeFailed recorded, or nil.
func (a *Agent) storeFailure() error {
	if p := a.storeErr.Load(); p != nil {
		return fmt.Errorf("agent: the WARC files cannot be written: %w", *p)
	}
	return nil
}

// runOutcome names the end of the run in a few words: "finished", "stopped",
// "limit" (--max-urls reached with URLs left) or "failed".
func (a *Agent) runOutcome() string {
	e := a.ended
	switch {
	case e.err != nil || e.closeErr != nil:
		return "failed"
	case e.stopped:
		return "stopped"
	case a.leftQueued > 0:
		return "limit"
	}
	return "finished"
}

// logEnd records the end of the run in the crawl log, and marks a crawl
// with nothing left as complete. It runs in closeAll, while the directory
// is still locked.
func (a *Agent) logEnd(closeErr error) {
	a.ended.closeErr = closeErr
	out := a.runOutcome()
	a.log.Info("crawl "+out, "elapsed", a.ended.elapsed.String(), "queued", a.leftQueued,
		"pages", a.stats.Fetched.Load(), "err", errors.Join(a.ended.err, closeErr))
	if out == "finished" {
		path := filepath.Join(a.cfg.Dir, "state", completeFile)
		if err := atomicfile.WriteBytes(path, []byte(time.Now().UTC().Format(time.RFC3339)+"\n"), atomicfile.Options{Sync: true}); err != nil {
			a.log.Error("mark complete", "err", err)
		}
	}
}

// summary is the end-of-run report: how the run ended, this run's pages
// and rate, the crawl's totals, and what to do next.
func (a *Agent) summary(start stats.Snapshot) string {
	e := a.ended
	end := a.stats.Snapshot()
	var head, next string
	switch a.runOutcome() {
	case "stopped":
		head = fmt.Sprintf("crawl stopped after %s", e.elapsed.Round(time.Millisecond))
		next = fmt.Sprintf("stopped: %d URLs queued; run the same command to resume", a.leftQueued)
		if a.left.Load() {
			next = "left the crawl, everything handed over: the same command joins it again while it runs (once it has ended, it says so and exits)"
		}
	case "limit":
		head = fmt.Sprintf("crawl finished in %s: --max-urls %d reached", e.elapsed.Round(time.Millisecond), a.cfg.Frontier.MaxURLs)
		next = fmt.Sprintf("%d URLs queued; raise --max-urls and run the same command to go on", a.leftQueued)
	case "failed":
		head = fmt.Sprintf("crawl failed after %s", e.elapsed.Round(time.Millisecond))
		if a.unsaved {
			next = "failed: once its cause is fixed (a full disk: free space), run the same command: it recovers from the last checkpoint and fetches again what was not saved"
		}
	default:
		head = fmt.Sprintf("crawl finished in %s", e.elapsed.Round(time.Millisecond))
		next = "complete: nothing left to fetch"
	}
	if n := a.failedThisRun; n > 0 {
		next += fmt.Sprintf("\n%d URLs given up after failures (logs/skipped.jsonl, state/failed): petrel crawl --dir %s --retry-failed fetches them again", n, a.cfg.Dir)
	}
	return stats.Summary(stats.Run{Head: head, Next: next, More: a.filterLine, Start: start, End: end, Elapsed: e.elapsed, Fetchers: a.live.Load().fetchers})
}
