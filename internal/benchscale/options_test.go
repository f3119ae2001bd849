package benchscale

import (
	"testing"
	"time"
)

// TestWebDefaults: --web-port -1 is an ephemeral port (0 for the web),
// and the web's start-up is bounded by the time bound unless set.
func TestWebDefaults(t *testing.T) {
	o, err := Options{Petrel: "petrel", Port: -1, TimeBound: 7 * time.Minute}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if o.Port != 0 || o.WebStartTimeout != 7*time.Minute {
		t.Errorf("port %d, start timeout %v; want 0, 7m", o.Port, o.WebStartTimeout)
	}
	o, _ = Options{Petrel: "petrel", WebStartTimeout: time.Second}.withDefaults()
	if o.Port != 80 || o.WebStartTimeout != time.Second {
		t.Errorf("port %d, start timeout %v; want 80, 1s", o.Port, o.WebStartTimeout)
	}
}
