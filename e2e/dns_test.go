package e2e

import (
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/petrel-crawler/petrel/internal/testweb"
)

// TestCrawlDNSCases covers two DNS cases of the hostile web: a name whose
// resolution times out (the system path is pointed at a DNS server on
// loopback that never answers: nothing reaches a real resolver), which is
// retried and then purged, counted; and a name with many addresses, which
// is crawled through one of them.
func TestCrawlDNSCases(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.66.9.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	var queries int
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 512)
		for {
			if _, _, err := pc.ReadFrom(buf); err != nil {
				return
			}
			queries++
		}
	}()
	r := startWeb(t, testweb.Config{Hosts: 4, HostsPerIP: 2, PagesPerHost: 5, Seed: 3, FirstIP: netip.MustParseAddr("127.66.0.1")})
	// Give one host three more addresses, listed after its real one.
	hosts, err := os.ReadFile(r.hosts)
	if err != nil {
		t.Fatal(err)
	}
	first := strings.Fields(strings.SplitN(string(hosts), "\n", 2)[0])
	multi := first[1]
	extra := "::1 " + multi + "\n127.66.8.1 " + multi + "\n127.66.8.2 " + multi + "\n"
	if err := os.WriteFile(r.hosts, append(hosts, extra...), 0o644); err != nil {
		t.Fatal(err)
	}
	seeds := filepath.Join(filepath.Dir(r.seeds), "seeds-dns.txt")
	seedText, _ := os.ReadFile(r.seeds)
	if err := os.WriteFile(seeds, append(seedText, "http://never-answers.petrel-dns-test.org/\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	r.seeds = seeds
	args := []string{"--system-dns=true", "--dns-server", pc.LocalAddr().String(), "--dns-timeout", "200ms",
		"--retries", "1", "--retry-delay", "50ms", "--host-delay", "20ms", "--ip-delay", "5ms"}
	if err := r.crawl(t, time.Minute, args...); err != nil {
		t.Fatalf("crawl: %v\n%s", err, r.stderr.String())
	}
	pc.Close()
	<-done
	st := readStats(t, r.dir)
	if st["DNSFailures"] != 1 {
		t.Errorf("DNSFailures = %d, want 1 (the name that never resolves)", st["DNSFailures"])
	}
	if queries == 0 {
		t.Error("the loopback DNS server received no query")
	}
	seen := map[string]bool{}
	for _, h := range r.web.Hits() {
		seen[key(h.Host, h.Path)] = true
		if h.Host == multi && h.IP.String() != first[0] {
			t.Errorf("%s fetched through %v, want its first IPv4 address %s", multi, h.IP, first[0])
		}
	}
	for _, u := range r.web.Expected() {
		if !seen[urlKey(t, u)] {
			t.Errorf("%s not fetched", u)
		}
	}
}
