package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoBenchmarkDepsInPetrel: plain `go build ./cmd/petrel` links no
// Pebble, nor what only Pebble brings (cockroachdb's errors, Sentry, gogo
// protobuf, cgo zstd), go-readability or lingua-go: the benchmarks'
// baselines (the sieve's Pebble, extraction's go-readability, language
// identification's lingua-go) are built with -tags petrelbench only.
func TestNoBenchmarkDepsInPetrel(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, banned := range []string{"github.com/cockroachdb/", "github.com/getsentry/", "github.com/gogo/protobuf", "github.com/DataDog/zstd", "codeberg.org/readeck/go-readability", "github.com/pemistahl/lingua-go"} {
			if strings.HasPrefix(dep, banned) {
				t.Errorf("petrel depends on %s", dep)
			}
		}
	}
}
