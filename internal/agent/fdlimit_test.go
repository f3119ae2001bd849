package agent

import (
	"io"
	"log/slog"
	"testing"
)

func TestFitIdleConns(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cases := []struct {
		name           string
		want, fetchers int
		limit          uint64
		got            int
	}{
		{"fits", 2048, 256, 1 << 20, 2048},
		{"unknown limit", 2048, 256, 0, 2048},
		{"lowered", 2048, 256, 1024, 1024 - 256 - fdReserve},
		{"exactly fits", 100, 100, 100 + 100 + fdReserve, 100},
		{"no room left", 2048, 5000, 1024, 1},
	}
	for _, c := range cases {
		if got := fitIdleConns(c.want, c.fetchers, c.limit, log); got != c.got {
			t.Errorf("%s: fitIdleConns(%d, %d, %d) = %d, want %d", c.name, c.want, c.fetchers, c.limit, got, c.got)
		}
	}
}
