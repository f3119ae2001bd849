package main

import (
	"os"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestREADMEListsEveryCrawlFlag keeps the README's flag table true: every
// flag of petrel crawl appears in it, and it names no flag that is gone.
func TestREADMEListsEveryCrawlFlag(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	cmd := crawlCmd()
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if !strings.Contains(readme, "| `--"+f.Name) {
			t.Errorf("README's flag table lacks --%s", f.Name)
		}
	})
	table := readme[strings.Index(readme, "<!-- flags -->"):]
	table = table[:strings.Index(table, "\n\n")]
	for _, line := range strings.Split(table, "\n") {
		if !strings.HasPrefix(line, "| `--") {
			continue
		}
		name := strings.Fields(strings.TrimPrefix(line, "| `--"))[0]
		name = strings.TrimRight(name, "`")
		if cmd.Flags().Lookup(name) == nil {
			t.Errorf("README lists --%s, which petrel crawl does not have", name)
		}
	}
}
