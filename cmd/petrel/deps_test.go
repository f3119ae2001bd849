package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoBenchmarkDepsInPetrel: plain `go build ./cmd/petrel` links no
// Pebble, nor what only Pebble brings (cockroachdb's errors, Sentry, gogo
// protobuf, cgo zstd): the sieve benchmark's Pebble baseline is built with
// -tags petrelbench only.
func TestNoBenchmarkDepsInPetrel(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, banned := range []string{"github.com/cockroachdb/", "github.com/getsentry/", "github.com/gogo/protobuf", "github.com/DataDog/zstd"} {
			if strings.HasPrefix(dep, banned) {
				t.Errorf("petrel depends on %s", dep)
			}
		}
	}
}
