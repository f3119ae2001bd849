package agent

import (
	"log/slog"
	"slices"
	"syscall"

	"github.com/petrel-crawler/petrel/internal/cluster"
	"github.com/petrel-crawler/petrel/internal/console"
	"github.com/petrel-crawler/petrel/internal/coord"
)

// fdReserve is the number of descriptors kept aside, beyond the
// connections of the fetchers and of the console and the idle keep-alive
// pool, for the crawl's own files (lock, logs, WARC, state, sieve buckets,
// checkpoints) and the runtime.
const fdReserve = 64

// descriptorLimit returns the process's descriptor limit (Go raises the
// soft limit to the hard one at start), or 0 when it cannot be read.
func descriptorLimit() uint64 {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0
	}
	return lim.Cur
}

// fitIdleConns returns the size of each of the pools of idle keep-alive
// connections (pools of them: HTTP/1.1, and HTTP/2 when offered): want,
// lowered so that held + pools × size + fdReserve stays within limit (0:
// unknown, want is kept), held being the connections the fetchers and the
// listeners may hold at once (heldConns). A lowered pool is logged; it is
// never below 1.
func fitIdleConns(want, pools, held int, limit uint64, log *slog.Logger) int {
	if limit == 0 || limit > 1<<30 {
		return want
	}
	room := (int64(limit) - int64(held) - fdReserve) / int64(max(pools, 1))
	if int64(want) <= room {
		return want
	}
	got := int(max(room, 1))
	log.Warn("idle keep-alive pool lowered to fit the descriptor limit",
		"max-idle-conns", want, "now", got, "fetchers and listeners", held, "descriptor limit", limit)
	return got
}

// idlePools is the number of idle connection pools of cfg's fetcher: the
// HTTP/1.1 one, and the HTTP/2 one with --http2 (each bounded by
// --max-idle-conns).
func idlePools(cfg *Config) int {
	if cfg.Fetch.HTTP2 {
		return 2
	}
	return 1
}

// heldConns is the connections cfg's fetchers and listeners may hold at
// once: one per fetcher, the console's cap when it listens, the
// exchange's in a crawl of several agents, and the descriptors of an
// embedded etcd member's connections on a coordinator.
func heldConns(cfg *Config) int {
	n := cfg.Fetchers
	if cfg.Console.Addr != "" {
		n += console.MaxConns
	}
	if cfg.Cluster.Enabled() {
		n += cluster.MaxExchangeConns
	}
	if slices.ContainsFunc(cfg.Cluster.ParsedCoordinators(), func(c coord.Coordinator) bool { return c.Name == cfg.Cluster.Agent }) {
		n += coord.MemberDescriptors
	}
	return n
}
