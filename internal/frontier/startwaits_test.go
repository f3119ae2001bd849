package frontier

import (
	"net/netip"
	"testing"
	"time"
)

// TestStartWaits: a release made within the base delays of the
// frontier's start waits at least their rest (an earlier process may
// have made requests no checkpoint recorded); later, the waits are the
// visit states' own.
func TestStartWaits(t *testing.T) {
	a, b := netip.MustParseAddr("10.9.0.1"), netip.MustParseAddr("10.9.0.2")
	set := &liveSettings{Settings: Settings{HostDelay: 300 * time.Millisecond, IPDelay: 100 * time.Millisecond}}
	waits := map[netip.Addr]time.Duration{a: 0, b: 500 * time.Millisecond}
	startWaits(waits, set, int64(50*time.Millisecond))
	if waits[a] != 250*time.Millisecond || waits[b] != 500*time.Millisecond {
		t.Errorf("50 ms after the start: waits %v, want a 250ms (the host delay's rest), b 500ms (its own)", waits)
	}
	waits = map[netip.Addr]time.Duration{a: 10 * time.Millisecond}
	startWaits(waits, set, int64(time.Second))
	if waits[a] != 10*time.Millisecond {
		t.Errorf("1 s after the start: wait %v, want its own 10ms", waits[a])
	}
}
