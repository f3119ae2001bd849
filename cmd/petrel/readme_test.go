package main

import (
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

var updateREADME = flag.Bool("update", false, "rewrite the README's generated flag table")

const readmePath = "../../README.md"

// TestREADMEFlagTable keeps the README's flag table, generated from the
// table of settings, up to date: go test ./cmd/petrel -run README -update
// rewrites it.
func TestREADMEFlagTable(t *testing.T) {
	b, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	const open, close = "<!-- flags: generated from the settings table by go test ./cmd/petrel -run README -update -->\n", "<!-- /flags -->"
	i, j := strings.Index(readme, open), strings.Index(readme, close)
	if i < 0 || j < i {
		t.Fatalf("README lacks the markers %q and %q around the flag table", strings.TrimSpace(open), close)
	}
	want := flagTable()
	if got := readme[i+len(open) : j]; got != want {
		if *updateREADME {
			if err := os.WriteFile(readmePath, []byte(readme[:i+len(open)]+want+readme[j:]), 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
		t.Errorf("README's flag table is stale: run go test ./cmd/petrel -run README -update")
	}
	cmd := crawlCmd()
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if f.Name != "help" && !strings.Contains(readme, "| `--"+f.Name) {
			t.Errorf("README's flag table lacks --%s", f.Name)
		}
	})
}

// TestDesignDoc keeps docs/design.md in the repository, linked from the
// README, and naming every internal package.
func TestDesignDoc(t *testing.T) {
	readme, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "(docs/design.md)") || strings.Contains(string(readme), "../shared/") {
		t.Error("the README must link docs/design.md and nothing outside the repository")
	}
	design, err := os.ReadFile("../../docs/design.md")
	if err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir("../../internal")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		name := "internal/" + e.Name()
		if e.IsDir() && !strings.Contains(string(design), "`"+name+"`") &&
			!(strings.HasPrefix(e.Name(), "bench") && strings.Contains(string(design), "`internal/bench*`")) {
			t.Errorf("docs/design.md does not name %s", name)
		}
	}
}
