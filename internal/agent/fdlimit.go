package agent

import (
	"log/slog"
	"syscall"
)

// fdReserve is the number of descriptors kept aside, beyond one connection
// per fetcher and the idle keep-alive pool, for the crawl's own files
// (lock, logs, WARC, state, sieve buckets, checkpoints) and the runtime.
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

// fitIdleConns returns the size of the idle keep-alive pool: want, lowered
// so that fetchers + pool + fdReserve stays within limit (0: unknown, want
// is kept). A lowered pool is logged; it is never below 1.
func fitIdleConns(want, fetchers int, limit uint64, log *slog.Logger) int {
	if limit == 0 || limit > 1<<30 {
		return want
	}
	room := int64(limit) - int64(fetchers) - fdReserve
	if int64(want) <= room {
		return want
	}
	got := int(max(room, 1))
	log.Warn("idle keep-alive pool lowered to fit the descriptor limit",
		"max-idle-conns", want, "now", got, "fetchers", fetchers, "descriptor limit", limit)
	return got
}
