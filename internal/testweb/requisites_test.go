package testweb

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/netip"
	"sort"
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
	all := w.Expected(16, 16, true)
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
	if len(all) != len(w.Expected(2, 10, true)) || len(all) <= len(w.Expected(2, 3, true)) ||
		len(w.Expected(2, 10, true)) <= len(w.Expected(2, 10, false)) ||
		len(w.Expected(0, 10, true)) != len(w.Pages()) || len(w.Pages()) != 3 {
		t.Errorf("budgets: %d %d %d %d %d, pages %d", len(all), len(w.Expected(2, 10, true)), len(w.Expected(2, 3, true)),
			len(w.Expected(2, 10, false)), len(w.Expected(0, 10, true)), len(w.Pages()))
	}
	site, cdn := w.Origins()
	for _, c := range []struct {
		embed, css int
		want       string
	}{
		{2, 10, ""},
		{16, 16, ""},
		{0, 10, ""},
		{2, 3, site + "/chain/d.css<" + site + "/chain/c.css"},
		{1, 10, site + "/css/inner.css<" + site + "/embed/inner.html " + site + "/img/inner.png<" + site + "/embed/inner.html " +
			site + "/img/minus.png<" + site + "/js/toggle.js " + site + "/img/plus.png<" + site + "/js/toggle.js"},
		{1, 1, cdn + "/cdn-font.woff2<" + cdn + "/cdn.css " + site + "/chain/b.css<" + site + "/chain/a.css " +
			site + "/css/fonts/f.woff2<" + site + "/css/site.css " + site + "/css/inner.css<" + site + "/embed/inner.html " +
			site + "/css/print.css<" + site + "/css/site.css " + site + "/img/css-bg.png<" + site + "/css/site.css " +
			site + "/img/imported-bg.png<" + site + "/css/imported.css " + site + "/img/inner.png<" + site + "/embed/inner.html " +
			site + "/img/minus.png<" + site + "/js/toggle.js " + site + "/img/plus.png<" + site + "/js/toggle.js"},
	} {
		var got []string
		for u, via := range w.Cut(c.embed, c.css, true) {
			got = append(got, u+"<"+via)
		}
		sort.Strings(got)
		if strings.Join(got, " ") != c.want {
			t.Errorf("Cut(%d, %d): %q, want %q", c.embed, c.css, got, c.want)
		}
	}
	for _, p := range w.Pages() {
		if !strings.HasPrefix(p.Title, "Requisites: ") {
			t.Errorf("page %s: title %q", p.URL, p.Title)
		}
	}
}
