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

// TestControlFlags checks the control commands' one way of reaching a
// crawl: --coordinators (or --etcd-endpoints) and the key are required, a
// malformed --coordinators is a flag error, and coordinators that do not
// answer end in an error within the command's timeout.
func TestControlFlags(t *testing.T) {
	key := filepath.Join(t.TempDir(), "crawl.key")
	if err := cluster.WriteKeyFile(key); err != nil {
		t.Fatal(err)
	}
	var fe flagError
	for _, c := range []struct {
		cf   controlFlags
		want string
	}{
		{controlFlags{keyFile: key}, "--coordinators (or --etcd-endpoints) and --cluster-key-file FILE are required"},
		{controlFlags{coordinators: "a1@127.0.0.1:7000"}, "--coordinators (or --etcd-endpoints) and --cluster-key-file FILE are required"},
		{controlFlags{coordinators: "a1@127.0.0.1", keyFile: key}, "want NAME@IP:PORT"},
		{controlFlags{coordinators: "a1@127.0.0.1:7000,a2@127.0.0.2:7000", keyFile: key}, "want 1, 3 or 5"},
	} {
		_, _, _, _, err := c.cf.open(context.Background(), time.Second)
		if !errors.As(err, &fe) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want a flag error with %q", c.cf, err, c.want)
		}
	}
	cf := controlFlags{coordinators: "a1@127.0.0.1:9", keyFile: key}
	start := time.Now()
	if _, _, _, _, err := cf.open(context.Background(), time.Second); err == nil || errors.As(err, &fe) {
		t.Errorf("coordinators not answering: %v", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("gave up after %s, want about the 1 s timeout", d)
	}
}
