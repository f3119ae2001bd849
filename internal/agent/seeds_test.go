package agent

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/petrel-crawler/petrel/internal/fetch"
	"github.com/petrel-crawler/petrel/internal/urlx"
)

// TestSeedUnreachableMessage checks the line a seed's host that cannot be
// reached prints: once per host, saying that its URLs wait and when they
// would be given up, not that they were (a host that answers again 20 s
// later loses nothing).
func TestSeedUnreachableMessage(t *testing.T) {
	seed, err := urlx.Parse("http://127.0.77.1:8077/index.html")
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	sg := newSeedGuard(fetch.Guard{}, &out, []urlx.URL{seed})
	refused := fmt.Errorf("dial: %w", syscall.ECONNREFUSED)
	sg.unreachable(seed.Hostname(), refused, time.Hour)
	sg.unreachable(seed.Hostname(), refused, time.Hour)
	got := out.String()
	if strings.Count(got, "\n") != 1 {
		t.Fatalf("want one line, got:\n%s", got)
	}
	for _, want := range []string{"seed http://127.0.77.1:8077/index.html", "its host cannot be reached (refused)",
		"its URLs stay queued", "given up only if it stays unreachable for --host-down-give-up 1h0m0s"} {
		if !strings.Contains(got, want) {
			t.Errorf("the line does not say %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "given up after") {
		t.Errorf("the line reads as if the host was given up:\n%s", got)
	}
}
