package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/petrel-crawler/petrel/internal/testweb"
)

// TestRealWebHitLog checks that "petrel testweb --shape real --hit-log"
// writes its request log once stopped: a request made over HTTPS (the
// web's CA trusted, the name from its hosts file) is in it.
func TestRealWebHitLog(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "requests.jsonl")
	cmd := testwebCmd()
	cmd.SetArgs([]string{"--shape", "real", "--out", dir, "--hit-log", log, "--web-hosts", "4", "--web-pages", "3",
		"--web-first-ip", "127.208.0.1", "--web-port", "0", "--web-dns", "off"})
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	seeds := filepath.Join(dir, "seeds.txt")
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(seeds); err == nil {
			if _, err := os.Stat(filepath.Join(dir, "hosts")); err == nil {
				break
			}
		}
		select {
		case err := <-done:
			t.Fatalf("testweb exited: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("testweb wrote no seeds and hosts files within 20 s")
		}
	}
	addrs := map[string]string{}
	f, err := os.Open(filepath.Join(dir, "hosts"))
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fs := strings.Fields(sc.Text()); len(fs) == 2 {
			addrs[fs[1]] = fs[0]
		}
	}
	f.Close()
	pem, err := os.ReadFile(filepath.Join(dir, "ca.pem"))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pem)
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots},
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			host, port, _ := net.SplitHostPort(addr)
			return (&net.Dialer{}).DialContext(ctx, network, net.JoinHostPort(addrs[host], port))
		}}
	defer tr.CloseIdleConnections()
	b, err := os.ReadFile(seeds)
	if err != nil {
		t.Fatal(err)
	}
	var seed string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "http") {
			seed = l
			break
		}
	}
	c := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	resp, err := c.Get(seed) // redirected to https:// on an HTTPS host
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	hits, err := testweb.ReadHitLog(log)
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) == 0 || !strings.Contains(seed, hits[0].Host) {
		t.Errorf("request log %+v for a request to %s", hits, seed)
	}
}
