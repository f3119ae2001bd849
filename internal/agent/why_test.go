package agent

import (
	"strings"
	"testing"

	"github.com/petrel-crawler/petrel/internal/console"
)

// TestNeverSeenFlushCaveat: a never-seen answer says a sieve flush may
// hide the URL only while one is under way; a sieve buffer that is merely
// not empty was searched, and says nothing.
func TestNeverSeenFlushCaveat(t *testing.T) {
	for _, flushing := range []bool{false, true} {
		var w console.Why
		neverSeen(&w, flushing)
		if w.State != console.WhyNeverSeen {
			t.Errorf("flushing %v: state %q, want never-seen", flushing, w.State)
		}
		said := strings.Contains(strings.Join(w.Caveats, "\n"), "flush")
		if said != flushing {
			t.Errorf("flushing %v: caveats %q: speak of a flush %v, want %v", flushing, w.Caveats, said, flushing)
		}
	}
}
