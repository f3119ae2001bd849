package agent

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/petrel-crawler/petrel/internal/frontier"
)

// TestRestartRefusesAnotherAssign: a crawl directory begun with one
// --assign is refused, with one line naming both policies, when it is
// opened again with another (its count keys and sieve hashes are keyed by
// the first), and opened again with the first.
func TestRestartRefusesAnotherAssign(t *testing.T) {
	c := newTestCrawl(t, "127.61.3.1", 2, 5, nil)
	c.a.closeAll()
	if b, _ := os.ReadFile(filepath.Join(c.cfg.Dir, "state", assignFile)); string(b) != "host\n" {
		t.Fatalf("state/%s = %q, want the policy of the first start", assignFile, b)
	}
	cfg := c.cfg
	var err error
	if cfg.Frontier.Assign, err = frontier.ParseAssign("authority"); err != nil {
		t.Fatal(err)
	}
	a, err := Open(cfg, nil)
	if err == nil {
		a.closeAll()
		t.Fatal("a crawl begun with --assign host opened with --assign authority")
	}
	msg := err.Error()
	if !errors.Is(err, ErrUsage) || strings.Contains(msg, "\n") ||
		!strings.Contains(msg, "--assign authority") || !strings.Contains(msg, "--assign host") {
		t.Fatalf("Open with another --assign: %q, want a one-line usage error naming both policies", msg)
	}
	a, err = Open(c.cfg, nil)
	if err != nil {
		t.Fatalf("reopen with the same --assign: %v", err)
	}
	a.closeAll()
}
