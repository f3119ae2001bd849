package benchcrawl

import (
	"strings"
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

// TestRealShapeArgs: --shape real serves "petrel testweb --shape real"
// and gives every crawler the web's certificate authority; another shape,
// or the real shape with --politeness, is refused.
func TestRealShapeArgs(t *testing.T) {
	o, err := Options{Petrel: "petrel", Shape: "real"}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	args := strings.Join(webArgs(o, "/w"), " ")
	for _, want := range []string{"testweb --out /w --shape real", "--web-hosts 2000", "--web-pages 50", "--web-dns off"} {
		if !strings.Contains(args, want) {
			t.Errorf("web args %q lack %q", args, want)
		}
	}
	web := &webProc{hostsPath: "/w/hosts", seedsPath: "/w/seeds.txt", caPath: "/w/ca.pem"}
	if a := strings.Join(petrelArgs(o, web, "/c", 0, "p"), " "); !strings.Contains(a, "--ca-file /w/ca.pem") {
		t.Errorf("petrel args %q lack the CA file", a)
	}
	for _, bad := range []Options{{Petrel: "p", Shape: "flat"}, {Petrel: "p", Shape: "real", PolitenessBound: true}} {
		if _, err := bad.withDefaults(); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}
