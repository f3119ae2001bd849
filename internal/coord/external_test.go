package coord

import (
	"context"
	"errors"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// externalEtcd starts Debian's (or any) etcd server binary, not a Petrel
// process, with TLS files issued by a, and returns its coordinator and
// process. It skips when the binary is absent, unless
// PETREL_REQUIRE_ETCD=1.
func externalEtcd(t *testing.T, a *Authority) (Coordinator, *os.Process) {
	t.Helper()
	bin := os.Getenv("PETREL_ETCD")
	if bin == "" {
		bin = "etcd"
	}
	path, err := exec.LookPath(bin)
	if err != nil {
		if os.Getenv("PETREL_REQUIRE_ETCD") == "1" {
			t.Fatalf("etcd server not found (%v) and PETREL_REQUIRE_ETCD=1", err)
		}
		t.Skip("no etcd server binary: apt-get install etcd-server (or set PETREL_ETCD) to run the external-etcd tests")
	}
	c := Coordinator{Name: "ext", Client: netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), freePort(t, "127.0.0.1"))}
	dir := t.TempDir()
	cert, err := a.Issue("ext", []netip.Addr{c.Client.Addr()})
	if err != nil {
		t.Fatal(err)
	}
	f, err := a.WriteFiles(filepath.Join(dir, "tls"), "ext", cert)
	if err != nil {
		t.Fatal(err)
	}
	cu, pu := "https://"+c.Client.String(), "https://"+c.Peer().String()
	cmd := exec.Command(path, "--name", "ext", "--data-dir", filepath.Join(dir, "data"),
		"--listen-client-urls", cu, "--advertise-client-urls", cu,
		"--listen-peer-urls", pu, "--initial-advertise-peer-urls", pu, "--initial-cluster", "ext="+pu,
		"--cert-file", f.Cert, "--key-file", f.Key, "--trusted-ca-file", f.CA, "--client-cert-auth",
		"--peer-cert-file", f.Cert, "--peer-key-file", f.Key, "--peer-trusted-ca-file", f.CA, "--peer-client-cert-auth",
		"--log-level", "error")
	log, _ := os.Create(filepath.Join(dir, "etcd.log"))
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGCONT)
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			b, _ := os.ReadFile(log.Name())
			t.Logf("etcd's log:\n%s", b)
		}
	})
	return c, cmd.Process
}

// The same coordination against an etcd server that is not a Petrel
// agent: the external mode's code path.
func TestExternalEtcd(t *testing.T) {
	a := testAuthority(t, 5)
	c, _ := externalEtcd(t, a)
	cli := dial(t, a, []Coordinator{c})
	lifecycle(t, NewCrawl(cli, "ext"))

	other := testAuthority(t, 6)
	cert, _ := other.Issue("intruder", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := Dial(ctx, Endpoints([]Coordinator{c}), other.ClientTLS(cert)); !errors.Is(err, ErrWrongKey) {
		t.Fatalf("another key against the external etcd: %v, want ErrWrongKey", err)
	}
}

// An agent cut off from etcd (the server stopped with SIGSTOP) is fenced
// once its lease's margin has passed: Live turns false no later than the
// send time of its last acknowledged keep-alive plus TTL minus margin,
// and contexts under the fence end with ErrFenced.
func TestFenceClosesWhenEtcdIsStopped(t *testing.T) {
	a := testAuthority(t, 7)
	c, proc := externalEtcd(t, a)
	cli := dial(t, a, []Coordinator{c})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ttl := 3 * time.Second
	l, err := GrantLease(ctx, cli, ttl)
	if err != nil {
		t.Fatal(err)
	}
	fenced, stop := l.Context(ctx)
	defer stop()
	time.Sleep(ttl / 2) // a keep-alive or two acknowledged
	if !l.Live(time.Now()) {
		t.Fatal("lease not live while etcd answers")
	}
	if err := proc.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	until, _ := l.Until()
	select {
	case <-fenced.Done():
	case <-time.After(ttl + time.Second):
		t.Fatalf("fence still open %s after etcd stopped", time.Since(stopped))
	}
	if cause := context.Cause(fenced); !errors.Is(cause, ErrFenced) {
		t.Fatalf("fenced context's cause %v", cause)
	}
	if late := time.Since(until); late > 200*time.Millisecond {
		t.Errorf("fence closed %s after its time", late)
	}
	if !until.Before(stopped.Add(ttl)) {
		t.Errorf("fence's time %s after the stop + TTL", until.Sub(stopped))
	}
	if l.Live(time.Now()) {
		t.Fatal("Live after the fence")
	}
	t.Logf("fence closed %s after etcd stopped", until.Sub(stopped))
}
