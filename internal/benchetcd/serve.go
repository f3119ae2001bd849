package benchetcd

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/petrel-crawler/petrel/internal/cluster"
	"github.com/petrel-crawler/petrel/internal/coord"
)

// Authority returns the crawl's certificate authority derived from k, as
// both the coordinator and the simulated agents make it.
func Authority(k cluster.Key) (*coord.Authority, error) {
	return coord.NewAuthority(k.Derive("coordination authority", 32))
}

// StartMember starts a single embedded etcd member named "c0" serving
// clients at addr, its data and TLS files under dir.
func StartMember(ctx context.Context, a *coord.Authority, addr netip.AddrPort, dir string, log func(string)) (*coord.Member, error) {
	self := coord.Coordinator{Name: "c0", Client: addr}
	cert, err := a.Issue(self.Name, []netip.Addr{addr.Addr()})
	if err != nil {
		return nil, err
	}
	files, err := a.WriteFiles(filepath.Join(dir, "tls"), self.Name, cert)
	if err != nil {
		return nil, err
	}
	return coord.StartMember(ctx, coord.MemberConfig{Self: self, Coordinators: []coord.Coordinator{self},
		Dir: filepath.Join(dir, "etcd"), TLS: files, Token: "petrel-bench-etcd", Log: log})
}

// readyLine is what Serve writes on out once its member serves.
const readyLine = "ready"

// Serve is the coordinator process: it starts the member under the key
// in keyFile, writes "ready" and a newline on out, and serves until in
// ends (its parent closed it or died), ctx ends, or the member fails.
func Serve(ctx context.Context, keyFile string, addr netip.AddrPort, dir string, in io.Reader, out io.Writer) error {
	k, err := cluster.ReadKeyFile(keyFile)
	if err != nil {
		return err
	}
	a, err := Authority(k)
	if err != nil {
		return err
	}
	// etcd's complaints about its own listeners closing are not news
	// once the member is being stopped.
	var closing atomic.Bool
	log := func(s string) {
		if !closing.Load() {
			fmt.Fprintln(os.Stderr, "etcd:", s)
		}
	}
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	m, err := StartMember(sctx, a, addr, dir, log)
	cancel()
	if err != nil {
		return err
	}
	defer func() {
		closing.Store(true)
		m.Close()
	}()
	fmt.Fprintln(out, readyLine)
	eof := make(chan struct{})
	go func() {
		io.Copy(io.Discard, in)
		close(eof)
	}()
	select {
	case <-eof:
		return nil
	case <-ctx.Done():
		return nil
	case err := <-m.Failed():
		return fmt.Errorf("benchetcd: the member failed: %w", err)
	}
}

// Process is a coordinator started by StartProcess.
type Process struct {
	Target
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

// StartProcess writes a crawl key under dir and starts the coordinator
// as the command exe args... followed by --key-file, --coordinator and
// --dir, which must run Serve. It returns once the member serves.
func StartProcess(ctx context.Context, exe string, args []string, ip netip.Addr, dir string) (*Process, error) {
	keyFile := filepath.Join(dir, "key")
	if err := cluster.WriteKeyFile(keyFile); err != nil {
		return nil, err
	}
	k, err := cluster.ReadKeyFile(keyFile)
	if err != nil {
		return nil, err
	}
	a, err := Authority(k)
	if err != nil {
		return nil, err
	}
	port, err := FreePortPair(ip)
	if err != nil {
		return nil, err
	}
	addr := netip.AddrPortFrom(ip, port)
	cmd := exec.Command(exe, append(args, "--key-file", keyFile, "--coordinator", addr.String(), "--dir", filepath.Join(dir, "coordinator"))...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &Process{Target: Target{Endpoints: coord.Endpoints([]coord.Coordinator{{Client: addr}}), Authority: a, PID: cmd.Process.Pid}, cmd: cmd, stdin: stdin}
	if err := waitReady(ctx, stdout); err != nil {
		p.cmd.Process.Kill()
		p.cmd.Wait()
		return nil, fmt.Errorf("benchetcd: the coordinator process: %w", err)
	}
	return p, nil
}

// waitReady waits for Serve's ready line.
func waitReady(ctx context.Context, stdout io.Reader) error {
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(stdout).ReadString('\n')
		line <- strings.TrimSpace(s)
		io.Copy(io.Discard, stdout)
	}()
	t := time.NewTimer(2 * time.Minute)
	defer t.Stop()
	select {
	case s := <-line:
		if s != readyLine {
			return fmt.Errorf("said %q instead of %q", s, readyLine)
		}
		return nil
	case <-t.C:
		return errors.New("not ready within 2 minutes")
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// Stop ends the coordinator: its stdin is closed and it exits.
func (p *Process) Stop() error {
	p.stdin.Close()
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	t := time.NewTimer(30 * time.Second)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
		p.cmd.Process.Kill()
		return fmt.Errorf("benchetcd: the coordinator did not stop within 30 s: killed: %v", <-done)
	}
}

// FreePortPair returns a port free on ip, with the next one free too
// (an etcd member's peers dial its client port + 1).
func FreePortPair(ip netip.Addr) (uint16, error) {
	for range 50 {
		ln, err := net.Listen("tcp", netip.AddrPortFrom(ip, 0).String())
		if err != nil {
			return 0, err
		}
		p := uint16(ln.Addr().(*net.TCPAddr).Port)
		ln.Close()
		if p == 65535 {
			continue
		}
		if ln2, err := net.Listen("tcp", netip.AddrPortFrom(ip, p+1).String()); err == nil {
			ln2.Close()
			return p, nil
		}
	}
	return 0, fmt.Errorf("benchetcd: no two consecutive free ports on %s", ip)
}
