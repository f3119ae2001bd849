package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// petrel is the path of the command built for these tests; clusterPetrel
// the one the multi-process cluster tests run, built without -race even
// when the tests are (several race-instrumented agents on two cores would
// measure the detector, not the crawl).
var petrel, clusterPetrel string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "petrel-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	petrel = filepath.Join(dir, "petrel")
	args := []string{"build", "-o", petrel}
	if raceEnabled {
		args = append(args, "-race")
	}
	cmd := exec.Command("go", append(args, "../cmd/petrel")...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building petrel:", err)
		os.Exit(1)
	}
	clusterPetrel = petrel
	if raceEnabled {
		clusterPetrel = filepath.Join(dir, "petrel-norace")
		cmd := exec.Command("go", "build", "-o", clusterPetrel, "../cmd/petrel")
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "building petrel without -race:", err)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
