package coord

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// freePort returns a port free on ip for itself and the next one.
func freePort(t *testing.T, ip string) uint16 {
	t.Helper()
	for range 50 {
		ln, err := net.Listen("tcp", ip+":0")
		if err != nil {
			t.Fatal(err)
		}
		p := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		if p >= 65535 {
			continue
		}
		if ln2, err := net.Listen("tcp", fmt.Sprintf("%s:%d", ip, p+1)); err == nil {
			ln2.Close()
			return uint16(p)
		}
	}
	t.Fatal("no two free ports")
	return 0
}

func testAuthority(t *testing.T, b byte) *Authority {
	t.Helper()
	seed := make([]byte, 32)
	seed[0] = b
	a, err := NewAuthority(seed)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// startMembers starts n embedded members on 127.0.0.1 and returns them
// with their coordinators.
func startMembers(t *testing.T, a *Authority, n int) ([]*Member, []Coordinator) {
	t.Helper()
	return startMembersWith(t, a, n, func(*MemberConfig) {})
}

// startMembersWith is startMembers with each member's configuration
// changed by opt.
func startMembersWith(t *testing.T, a *Authority, n int, opt func(*MemberConfig)) ([]*Member, []Coordinator) {
	t.Helper()
	var cs []Coordinator
	for i := range n {
		cs = append(cs, Coordinator{Name: fmt.Sprintf("c%d", i), Client: netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), freePort(t, "127.0.0.1"))})
	}
	ms := make([]*Member, n)
	errs := make(chan error, n)
	dir := t.TempDir()
	for i, c := range cs {
		go func() {
			cert, err := a.Issue(c.Name, []netip.Addr{c.Client.Addr()})
			if err != nil {
				errs <- err
				return
			}
			files, err := a.WriteFiles(filepath.Join(dir, c.Name, "tls"), c.Name, cert)
			if err != nil {
				errs <- err
				return
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			mc := MemberConfig{Self: c, Coordinators: cs, Dir: filepath.Join(dir, c.Name, "etcd"), TLS: files, Token: "test"}
			opt(&mc)
			ms[i], err = StartMember(ctx, mc)
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, m := range ms {
			m.Close()
		}
	})
	return ms, cs
}

func dial(t *testing.T, a *Authority, cs []Coordinator) *clientv3.Client {
	t.Helper()
	cert, err := a.Issue("client", nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cli, err := Dial(ctx, Endpoints(cs), a.ClientTLS(cert))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

func TestWrongKeyIsRefusedAtOnce(t *testing.T) {
	a := testAuthority(t, 1)
	_, cs := startMembers(t, a, 1)
	other := testAuthority(t, 2)
	cert, _ := other.Issue("intruder", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	_, err := Dial(ctx, Endpoints(cs), other.ClientTLS(cert))
	if err == nil || !errorsIs(err, ErrWrongKey) {
		t.Fatalf("Dial with another key: %v, want ErrWrongKey", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("refusal took %s", d)
	}
	// And with the right authority but presenting no certificate of it.
	own, _ := a.Issue("x", nil)
	tc := a.ClientTLS(own)
	tc.Certificates = nil
	if _, err := Dial(ctx, Endpoints(cs), tc); !errorsIs(err, ErrWrongKey) {
		t.Fatalf("Dial without a certificate: %v, want ErrWrongKey", err)
	}
}
