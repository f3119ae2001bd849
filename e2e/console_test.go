package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// consoleCrawl is a petrel crawl running in the background with its
// console on.
type consoleCrawl struct {
	*crawlRun
	under  []string // a command the crawl runs under (prlimit …), nil: none
	cmd    *exec.Cmd
	base   string // http://IP:PORT
	token  string
	login  string // the one-time login link
	done   chan error
	mu     sync.Mutex
	stderr bytes.Buffer
}

var consoleLine = regexp.MustCompile(`console at (http://\S+/) \(one-time login link: (\S+)\)`)

// freeAddr returns a free loopback address for a console.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startConsoleCrawl starts petrel crawl with the standard test flags, a
// console on a free loopback port and extra, and waits for the console.
func startConsoleCrawl(t *testing.T, r *crawlRun, extra ...string) *consoleCrawl {
	t.Helper()
	c := &consoleCrawl{crawlRun: r, done: make(chan error, 1)}
	c.start(t, extra...)
	return c
}

func (c *consoleCrawl) start(t *testing.T, extra ...string) {
	t.Helper()
	args := append([]string{"crawl", "--dir", c.dir, "--hosts", c.hosts, "--seeds", c.seeds,
		"--allow-private", "--system-dns=false", "--progress", "1s", "--console-addr", freeAddr(t)}, extra...)
	argv := append(append(append([]string(nil), c.under...), petrel), args...)
	c.cmd = exec.Command(argv[0], argv[1:]...)
	pr, pw := io.Pipe()
	c.cmd.Stderr = pw
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c.done = make(chan error, 1)
	go func() { err := c.cmd.Wait(); pw.Close(); c.done <- err }()
	found := make(chan []string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			c.mu.Lock()
			c.stderr.WriteString(sc.Text() + "\n")
			c.mu.Unlock()
			if m := consoleLine.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m:
				default:
				}
			}
		}
	}()
	t.Cleanup(func() {
		// The goroutine waiting for the process owns the Cmd (Wait sets
		// its ProcessState); killing a process that has exited is a
		// harmless error.
		c.cmd.Process.Kill()
	})
	select {
	case m := <-found:
		c.base = strings.TrimSuffix(m[1], "/")
		c.login = m[2]
	case err := <-c.done:
		t.Fatalf("petrel crawl exited before its console started: %v\n%s", err, c.log())
	case <-time.After(30 * time.Second):
		t.Fatalf("no console line within 30s:\n%s", c.log())
	}
	tok, err := os.ReadFile(filepath.Join(c.dir, "state", "console.token"))
	if err != nil {
		t.Fatal(err)
	}
	c.token = strings.TrimSpace(string(tok))
}

func (c *consoleCrawl) log() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stderr.String()
}

// wait waits for the crawl to exit.
func (c *consoleCrawl) wait(t *testing.T, timeout time.Duration) error {
	t.Helper()
	select {
	case err := <-c.done:
		return err
	case <-time.After(timeout):
		c.cmd.Process.Signal(syscall.SIGQUIT)
		t.Fatalf("petrel crawl did not exit within %s:\n%s", timeout, c.log())
		return nil
	}
}

// call makes one API call; auth adds the token. It returns the status and
// the body.
func (c *consoleCrawl) call(t *testing.T, method, path string, body any, auth bool) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if auth {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// must makes an authorised call and fails the test unless it answers 200.
func (c *consoleCrawl) must(t *testing.T, method, path string, body any) []byte {
	t.Helper()
	code, b := c.call(t, method, path, body, true)
	if code != http.StatusOK {
		t.Fatalf("%s %s: %d %s", method, path, code, b)
	}
	return b
}

// status returns GET /status decoded.
func (c *consoleCrawl) status(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(c.must(t, "GET", "/api/v1/status", nil), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// pages is the pages-fetched total of a status.
func pages(st map[string]any) int64 {
	return int64(st["totals"].(map[string]any)["pages"].(float64))
}

func (c *consoleCrawl) String() string { return fmt.Sprintf("console %s", c.base) }

// settings returns GET /config decoded.
func (c *consoleCrawl) settings(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(c.must(t, "GET", "/api/v1/config", nil), &m); err != nil {
		t.Fatal(err)
	}
	return m
}
