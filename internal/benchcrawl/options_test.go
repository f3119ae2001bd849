package benchcrawl

import (
	"testing"
	"time"
)

// TestWebDefaults: --web-port -1 is an ephemeral port (0 for the web),
// and the web's start-up is bounded by the time bound, at least 3m.
func TestWebDefaults(t *testing.T) {
	for _, c := range []struct {
		port, wantPort  int
		bound, webStart time.Duration
		want            time.Duration
	}{
		{-1, 0, 0, 0, 3 * time.Minute},
		{0, 8080, 10 * time.Minute, 0, 10 * time.Minute},
		{9000, 9000, time.Minute, 0, 3 * time.Minute},
		{0, 8080, 10 * time.Minute, 20 * time.Second, 20 * time.Second},
	} {
		o, err := Options{Petrel: "petrel", Port: c.port, TimeBound: c.bound, WebStartTimeout: c.webStart}.withDefaults()
		if err != nil {
			t.Fatal(err)
		}
		if o.Port != c.wantPort || o.WebStartTimeout != c.want {
			t.Errorf("port %d, bound %v, start %v: port %d, start timeout %v; want %d, %v",
				c.port, c.bound, c.webStart, o.Port, o.WebStartTimeout, c.wantPort, c.want)
		}
	}
}
