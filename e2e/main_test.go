package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// petrel is the path of the command built for these tests, without -race
// even when the tests are built with it: a race-instrumented crawler on
// two cores measures the detector, not the crawl, and the agent's
// concurrency runs under the detector in its own package's tests.
// racePetrel is the same command built with -race when the tests are (the
// whole crawls that run under the detector end to end,
// TestCrawlSyntheticWeb and TestCrawlHostileWeb), petrel otherwise.
var petrel, racePetrel string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "petrel-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	petrel, racePetrel = filepath.Join(dir, "petrel"), filepath.Join(dir, "petrel")
	if raceEnabled {
		racePetrel = filepath.Join(dir, "petrel-race")
	}
	// The two builds (with and without -race) run at once: each spends
	// most of its time linking, on one core.
	// Both carry the crash tests' fault injection (PETREL_CRASH_AT), which
	// only a build with the petrelcrash tag has.
	builds := map[string][]string{petrel: {"build", "-tags", "petrelcrash", "-o", petrel}}
	if raceEnabled {
		builds[racePetrel] = []string{"build", "-race", "-tags", "petrelcrash", "-o", racePetrel}
	}
	errs := make(chan error, len(builds))
	for out, args := range builds {
		go func() {
			cmd := exec.Command("go", append(args, "../cmd/petrel")...)
			cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
			if err := cmd.Run(); err != nil {
				errs <- fmt.Errorf("building %s: %w", filepath.Base(out), err)
				return
			}
			errs <- nil
		}()
	}
	for range builds {
		if err := <-errs; err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
