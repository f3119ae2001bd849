package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/binary"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/petrel-crawler/petrel/internal/cluster"
	"github.com/petrel-crawler/petrel/internal/frontier"
)

// checkForgedAndReplayed sends batches to a running agent's exchange the
// way an intruder would: a batch for its ready queue from a client holding
// another key, and from one with no certificate (both refused in the TLS
// handshake); a batch the agent already applied, replayed as captured from
// its inbox (acknowledged, counted as a duplicate, not applied again); a
// malformed batch sent with the key (refused, counted). The forged batch
// names a page the web does not have: the judge, which refuses any
// unexpected fetch and any page fetched twice, shows that none of them had
// an effect on the crawl.
func checkForgedAndReplayed(t *testing.T, c *clusterRun, a *agentProc, otherKey string) {
	t.Helper()
	exchange := exchangeOf(t, a)
	key, err := cluster.ReadKeyFile(c.key)
	if err != nil {
		t.Fatal(err)
	}
	other, err := cluster.ReadKeyFile(otherKey)
	if err != nil {
		t.Fatal(err)
	}
	good, _ := cluster.NewClient(key)
	defer good.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	replay := capturedBatch(t, a, cluster.KindReady)
	before, err := good.GetStatus(ctx, exchange)
	if err != nil {
		t.Fatal(err)
	}

	forged := &cluster.Batch{ID: cluster.BatchID{Sender: "intruder", Incarnation: 1, Seq: 1}, Kind: cluster.KindReady,
		Records: [][]byte{frontier.AppendRecord(nil, frontier.Meta{}, forgedURL(t, c))}}
	wire, _ := forged.Encode(nil, nil)
	forger, _ := cluster.NewClient(other)
	defer forger.Close()
	if err := forger.SendBatch(ctx, exchange, wire); err == nil {
		t.Error("a batch from a client holding another key was accepted")
	}
	if err := noCertPost(exchange, wire); err == nil {
		t.Error("a batch from a client with no certificate was accepted")
	}
	const replays = 2
	for i := 0; i < replays; i++ {
		if err := good.SendBatch(ctx, exchange, replay); err != nil {
			t.Errorf("replayed batch: %v, want it acknowledged as a duplicate", err)
		}
	}
	if err := good.SendBatch(ctx, exchange, []byte("PTB1 not a batch")); err == nil {
		t.Error("a malformed batch was accepted")
	}
	after, err := good.GetStatus(ctx, exchange)
	if err != nil {
		t.Fatal(err)
	}
	if d := after.Duplicates - before.Duplicates; d < replays {
		t.Errorf("agent %s counted %d duplicate batches for %d replays", a.name, d, replays)
	}
	if r := after.Refused - before.Refused; r != 1 {
		t.Errorf("agent %s counted %d refused batches, want 1 (the malformed one)", a.name, r)
	}
}

// exchangeOf is the agent's exchange address: its membership port + 1.
func exchangeOf(t *testing.T, a *agentProc) string {
	ap := netip.MustParseAddrPort(a.bind)
	return netip.AddrPortFrom(ap.Addr(), ap.Port()+1).String()
}

// capturedBatch waits (bounded) for a batch of kind in the agent's inbox
// and returns its wire form as it arrived.
func capturedBatch(t *testing.T, a *agentProc, kind cluster.Kind) []byte {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		segs, _ := filepath.Glob(filepath.Join(a.dir, "state", "cluster", "inbox", "*.log"))
		for _, seg := range segs {
			b, _ := os.ReadFile(seg)
			for len(b) >= 8 {
				n := int(binary.LittleEndian.Uint32(b))
				if len(b) < 8+n {
					break
				}
				wire := b[8 : 8+n]
				if bt, err := cluster.DecodeBatch(wire); err == nil && bt.Kind == kind {
					return bytes.Clone(wire)
				}
				b = b[8+n:]
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("agent %s: no %s batch in its inbox within 15s", a.name, kind)
	return nil
}

// forgedURL is a page of one of the web's hosts that the web does not
// link to.
func forgedURL(t *testing.T, c *clusterRun) string {
	for _, u := range c.web.web.Expected() {
		if i := strings.Index(u, "://"); i >= 0 {
			if j := strings.IndexByte(u[i+3:], '/'); j >= 0 {
				return u[:i+3+j] + "/forged-by-an-intruder"
			}
		}
	}
	t.Fatal("no expected URL in the web")
	return ""
}

// noCertPost posts wire as a batch over TLS with no client certificate.
func noCertPost(addr string, wire []byte) error {
	tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}}, ForceAttemptHTTP2: true}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	resp, err := hc.Post("https://"+addr+"/v1/batch", "application/octet-stream", bytes.NewReader(wire))
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return &statusErr{resp.StatusCode}
	}
	return nil
}

type statusErr struct{ code int }

func (e *statusErr) Error() string { return http.StatusText(e.code) }
