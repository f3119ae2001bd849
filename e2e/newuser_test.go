package e2e

import (
	"bufio"
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDemoAndTestwebSayWhatNext checks that petrel demo ends with the next
// commands to try, and that petrel testweb prints the crawl command that
// crawls it.
func TestDemoAndTestwebSayWhatNext(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demo")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, petrel, "demo", "--dir", dir, "--web-hosts", "2", "--web-pages", "3", "--web-first-ip", "127.85.0.1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("demo: %v\n%s", err, stderr.String())
	}
	for _, want := range []string{"\nnext:\n", "petrel warc ls " + dir, "petrel warc cat --body --dir " + dir, "petrel testweb"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("demo's output lacks %q:\n%s", want, stderr.String())
		}
	}

	web := exec.CommandContext(ctx, petrel, "testweb", "--out", t.TempDir(), "--web-hosts", "2", "--web-pages", "3", "--web-first-ip", "127.85.1.1")
	out, err := web.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := web.Start(); err != nil {
		t.Fatal(err)
	}
	defer web.Process.Kill()
	sc := bufio.NewScanner(out)
	found := false
	for sc.Scan() {
		if strings.Contains(sc.Text(), "petrel crawl --hosts ") {
			found = true
			break
		}
	}
	if !found {
		t.Error("testweb printed no crawl command")
	}
}
