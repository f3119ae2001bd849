package agent

import (
	"io"
	"log/slog"
	"testing"

	"github.com/petrel-crawler/petrel/internal/cluster"
	"github.com/petrel-crawler/petrel/internal/console"
	"github.com/petrel-crawler/petrel/internal/coord"
)

func TestFitIdleConns(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cases := []struct {
		name           string
		want, fetchers int
		limit          uint64
		got            int
		pools          int
	}{
		{"fits", 2048, 256, 1 << 20, 2048, 1},
		{"unknown limit", 2048, 256, 0, 2048, 1},
		{"lowered", 2048, 256, 1024, 1024 - 256 - fdReserve, 1},
		{"exactly fits", 100, 100, 100 + 100 + fdReserve, 100, 1},
		{"no room left", 2048, 5000, 1024, 1, 1},
		{"with the console", 2048, 256 + console.MaxConns, 1024, 1024 - 256 - console.MaxConns - fdReserve, 1},
		{"two pools (HTTP/2)", 2048, 256, 1024, (1024 - 256 - fdReserve) / 2, 2},
		{"two pools fit", 2048, 256, 1 << 20, 2048, 2},
	}
	for _, c := range cases {
		if got := fitIdleConns(c.want, max(c.pools, 1), c.fetchers, c.limit, log); got != c.got {
			t.Errorf("%s: fitIdleConns(%d, %d, %d) = %d, want %d", c.name, c.want, c.fetchers, c.limit, got, c.got)
		}
	}
}

// TestHeldConnsCountsTheConsole: the console's cap is counted in the
// descriptors the fetchers' pool must leave room for, when it listens.
func TestHeldConnsCountsTheConsole(t *testing.T) {
	cfg := Config{Fetchers: 16}
	if n := heldConns(&cfg); n != 16 {
		t.Errorf("no console: %d held, want 16", n)
	}
	cfg.Console.Addr = "127.0.0.1:0"
	if n := heldConns(&cfg); n != 16+console.MaxConns {
		t.Errorf("with the console: %d held, want %d", n, 16+console.MaxConns)
	}
}

// TestHeldConnsCountsTheListeners: the exchange's cap is counted in a
// crawl of several agents, and an embedded etcd member's descriptors on
// an agent named as a coordinator only.
func TestHeldConnsCountsTheListeners(t *testing.T) {
	cfg := Config{Fetchers: 16}
	cfg.Cluster.Agent, cfg.Cluster.Bind = "b", "127.0.0.1:7000"
	cfg.Cluster.Coordinators = "a@127.0.0.1:7002"
	if n, want := heldConns(&cfg), 16+cluster.MaxExchangeConns; n != want {
		t.Errorf("an agent not coordinating: %d held, want %d", n, want)
	}
	cfg.Cluster.Agent = "a"
	if n, want := heldConns(&cfg), 16+cluster.MaxExchangeConns+coord.MemberDescriptors; n != want {
		t.Errorf("a coordinator: %d held, want %d", n, want)
	}
}
