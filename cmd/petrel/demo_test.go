package main

import (
	"strings"
	"testing"
)

// TestDemoNextRunsAsRun: the demo's "next:" commands run petrel the way
// the demo was run: through go run when go run built it (no petrel binary
// exists then), else by the name it was run by.
func TestDemoNextRunsAsRun(t *testing.T) {
	for _, c := range []struct{ exe, arg0, want string }{
		{"/tmp/go-build2915/b001/exe/petrel", "/tmp/go-build2915/b001/exe/petrel", "go run ./cmd/petrel"},
		{"/home/u/petrel/petrel", "./petrel", "./petrel"},
		{"/usr/local/bin/petrel", "petrel", "petrel"},
	} {
		if got := commandFor(c.exe, c.arg0); got != c.want {
			t.Errorf("commandFor(%q, %q) = %q, want %q", c.exe, c.arg0, got, c.want)
		}
	}
	next := demoNext("./demo-crawl", "http://a.test/", goRun)
	for _, want := range []string{"go run ./cmd/petrel warc ls ./demo-crawl/warc/*.warc.gz", "go run ./cmd/petrel warc cat --body --dir ./demo-crawl http://a.test/", "go build -o petrel ./cmd/petrel"} {
		if !strings.Contains(next, want) {
			t.Errorf("the demo's hints under go run lack %q:\n%s", want, next)
		}
	}
	for _, line := range strings.Split(next, "\n") {
		if strings.Contains(line, ":  petrel ") {
			t.Errorf("a hint names a petrel binary that go run did not leave: %q", line)
		}
	}
}
