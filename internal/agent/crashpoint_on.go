//go:build petrelcrash

package agent

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
)

// crashPoint is the point PETREL_CRASH_AT names (see crashpoint.go).
type crashPoint struct {
	name string
	at   int64
	n    atomic.Int64
}

// newCrashPoint reads PETREL_CRASH_AT; nil when it is unset or malformed.
func newCrashPoint() *crashPoint {
	v := os.Getenv("PETREL_CRASH_AT")
	name, num, ok := strings.Cut(v, ":")
	if !ok {
		return nil
	}
	at, err := strconv.ParseInt(num, 10, 64)
	if err != nil || at < 1 {
		return nil
	}
	return &crashPoint{name: name, at: at}
}

// reach kills the process at the configured point.
func (c *crashPoint) reach(name string) {
	if c == nil || c.name != name || c.n.Add(1) != c.at {
		return
	}
	fmt.Fprintf(os.Stderr, "petrel: PETREL_CRASH_AT: killing myself at %s #%d\n", name, c.at)
	syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {}
}
