package testweb

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
)

// TestRequisitesSite fetches every URL of the requisites site through its
// hosts file's addresses and checks the answers, and the shape of
// Expected for each budget.
func TestRequisitesSite(t *testing.T) {
	w, err := StartRequisites(context.Background(), netip.MustParseAddr("127.91.1.1"))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	addrs := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(w.HostsFile())), "\n") {
		f := strings.Fields(line)
		addrs[f[1]] = f[0]
	}
	client := &http.Client{
		Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			host, port, _ := net.SplitHostPort(addr)
			return (&net.Dialer{}).DialContext(ctx, network, net.JoinHostPort(addrs[host], port))
		}},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	all := w.Expected(16, true)
	for u, hops := range all {
		resp, err := client.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		want := 200
		if strings.HasSuffix(u, "/img/moved.png") {
			want = 301
		}
		if resp.StatusCode != want || resp.Header.Get("Content-Type") == "" || want == 200 && len(body) == 0 {
			t.Errorf("%s (%s): status %d, type %q, %d bytes", u, hops, resp.StatusCode, resp.Header.Get("Content-Type"), len(body))
		}
	}
	if n := len(hitsAtLeast(w, len(all))); n != len(all) {
		t.Errorf("%d hits logged for %d requests", n, len(all))
	}
	if len(all) <= len(w.Expected(2, true)) || len(w.Expected(2, true)) <= len(w.Expected(2, false)) ||
		len(w.Expected(0, true)) != len(w.Pages()) || len(w.Pages()) != 3 {
		t.Errorf("budgets: %d %d %d %d, pages %d", len(all), len(w.Expected(2, true)), len(w.Expected(2, false)),
			len(w.Expected(0, true)), len(w.Pages()))
	}
	for _, p := range w.Pages() {
		if !strings.HasPrefix(p.Title, "Requisites: ") {
			t.Errorf("page %s: title %q", p.URL, p.Title)
		}
	}
}
