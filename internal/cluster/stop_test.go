package cluster

import (
	"testing"

	"github.com/petrel-crawler/petrel/internal/coord"
)

// TestStopApplies: which agents a whole-crawl stop stops.
func TestStopApplies(t *testing.T) {
	stop := func(stopRev, viewRev int64) coord.State {
		return coord.State{Stopped: true, StopRev: stopRev, View: coord.View{Rev: viewRev}}
	}
	for _, c := range []struct {
		what           string
		st             coord.State
		regRev, obeyed int64
		want           bool
	}{
		{"no stop", coord.State{View: coord.View{Rev: 5}}, 3, 0, false},
		{"a stop after the registration", stop(10, 5), 3, 0, true},
		{"a stop during the formation, registered after it", stop(10, 0), 12, 0, true},
		{"a stop before the registration, a view since (the crawl resumed)", stop(10, 15), 20, 0, false},
		{"started again after obeying it", stop(10, 5), 20, 10, false},
		{"started again, an older stop obeyed", stop(30, 5), 40, 10, true},
		{"obeyed in this process already", stop(10, 5), 3, 10, false},
	} {
		if got := stopApplies(c.st, c.regRev, c.obeyed); got != c.want {
			t.Errorf("%s: stopApplies = %v, want %v", c.what, got, c.want)
		}
	}
}
