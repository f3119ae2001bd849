package main

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/petrel-crawler/petrel/internal/cluster"
)

// TestControlEach checks the control commands' one way of reaching a crawl:
// every --join address is tried in turn (at its exchange port), the first
// answer ends the round, a refusal (finalError) ends it with the refusal, and
// when nobody answers the error names every address tried.
func TestControlEach(t *testing.T) {
	key := filepath.Join(t.TempDir(), "crawl.key")
	if err := cluster.WriteKeyFile(key); err != nil {
		t.Fatal(err)
	}
	cf := controlFlags{join: []string{"127.0.0.1:7000", "127.0.0.2:7000", "127.0.0.3:7000"}, keyFile: key}
	unreachable := errors.New("connection refused")
	cases := []struct {
		name    string
		answers map[string]error // by address; absent: unreachable
		tried   string
		wantErr string
	}{
		{"second answers", map[string]error{"127.0.0.2:7001": nil}, "127.0.0.1:7001 127.0.0.2:7001", ""},
		{"first refuses", map[string]error{"127.0.0.1:7001": finalError{errors.New("refused: a3 is alive")}}, "127.0.0.1:7001", "refused: a3 is alive"},
		{"nobody answers", nil, "127.0.0.1:7001 127.0.0.2:7001 127.0.0.3:7001",
			"no agent answered at 127.0.0.1:7001,127.0.0.2:7001,127.0.0.3:7001: connection refused"},
	}
	for _, c := range cases {
		var tried []string
		err := cf.each(context.Background(), time.Second, func(ctx context.Context, cl *cluster.Client, addr string) error {
			if _, ok := ctx.Deadline(); !ok || cl == nil {
				t.Errorf("%s: try called without a deadline or a client", c.name)
			}
			tried = append(tried, addr)
			if err, ok := c.answers[addr]; ok {
				return err
			}
			return unreachable
		})
		if got := strings.Join(tried, " "); got != c.tried {
			t.Errorf("%s: tried %q, want %q", c.name, got, c.tried)
		}
		if (err == nil) != (c.wantErr == "") || err != nil && err.Error() != c.wantErr {
			t.Errorf("%s: error %v, want %q", c.name, err, c.wantErr)
		}
	}
	cf.exchangePort = 9000
	var tried []string
	cf.each(context.Background(), time.Second, func(_ context.Context, _ *cluster.Client, addr string) error {
		tried = append(tried, addr)
		return unreachable
	})
	if got := strings.Join(tried, " "); got != "127.0.0.1:9000 127.0.0.2:9000 127.0.0.3:9000" {
		t.Errorf("with --exchange-port 9000: tried %q", got)
	}
	if err := (&controlFlags{keyFile: key}).each(context.Background(), time.Second, nil); !errors.As(err, new(flagError)) {
		t.Errorf("without --join: %v, want a flag error", err)
	}
}
