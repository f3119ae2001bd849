package urlx

import (
	"errors"
	"strings"
	"testing"
)

func TestNormalize(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"http://example.com", "http://example.com/"},
		{"HTTP://WWW.Example.COM/Path", "http://www.example.com/Path"},
		{"https://example.com:443/", "https://example.com/"},
		{"http://example.com:80/a", "http://example.com/a"},
		{"http://example.com:443/a", "http://example.com:443/a"},
		{"https://example.com:80/a", "https://example.com:80/a"},
		{"http://example.com:0080/", "http://example.com/"},
		{"http://example.com:08080/", "http://example.com:8080/"},
		{"http://example.com:/", "http://example.com/"},
		{"http://example.com/a#frag", "http://example.com/a"},
		{"http://example.com/a?b=c#frag", "http://example.com/a?b=c"},
		{"http://example.com/a?", "http://example.com/a"},
		{"http://example.com/?#", "http://example.com/"},
		{"http://example.com/a/./b/../c", "http://example.com/a/c"},
		{"http://example.com/a/b/..", "http://example.com/a/"},
		{"http://example.com/a/b/.", "http://example.com/a/b/"},
		{"http://example.com/../../x", "http://example.com/x"},
		{"http://example.com/a/%2e%2E/b", "http://example.com/b"},
		{"http://example.com/a/.%2e/b", "http://example.com/b"},
		{"http://example.com/%41%7e%7E%2d%5F", "http://example.com/A~~-_"},
		{"http://example.com/%3a%2f%c3%a9", "http://example.com/%3A%2F%C3%A9"},
		{"http://example.com/?q=%41%2b", "http://example.com/?q=A%2B"},
		{"http://example.com/100%", "http://example.com/100%25"},
		{"http://example.com/%zz", "http://example.com/%25zz"},
		{"http://example.com/%%41b", "http://example.com/%25Ab"},
		{"http://example.com/a b", "http://example.com/a%20b"},
		{"  http://example.com/a\t\nb  ", "http://example.com/ab"},
		{"http://example.com/a b?c d", "http://example.com/a%20b?c%20d"},
		{"http://example.com/é", "http://example.com/%C3%A9"},
		{"http://example.com/?q='\"", "http://example.com/?q=%27%22"},
		{"http:\\\\example.com\\a\\b", "http://example.com/a/b"},
		{"http:/example.com/", "http://example.com/"},
		{"http:///example.com/", "http://example.com/"},
		{"http://user:pass@example.com/", "http://example.com/"},
		{"http://@example.com/", "http://example.com/"},
		{"http://Bücher.example/", "http://xn--bcher-kva.example/"},
		{"http://ＥＸＡＭＰＬＥ.com/", "http://example.com/"},
		{"http://xn--bcher-kva.example/", "http://xn--bcher-kva.example/"},
		{"http://%65xample.com/", "http://example.com/"},
		{"http://example.com./", "http://example.com./"},
		{"http://[::1]/", "http://[::1]/"},
		{"http://[0:0::1]:80/", "http://[::1]/"},
		{"http://[2001:DB8::1]:8080/x", "http://[2001:db8::1]:8080/x"},
		{"http://127.0.0.1:8080/", "http://127.0.0.1:8080/"},
		{"http://0x7f.1/", "http://127.0.0.1/"},
		{"http://2130706433/", "http://127.0.0.1/"},
		{"http://010.0.0.1/", "http://8.0.0.1/"},
		{"http://a.b-c.d_e.com/", "http://a.b-c.d_e.com/"},
		{"https://example.com/a/b;p?x=1&y=2", "https://example.com/a/b;p?x=1&y=2"},
		{"http://example.com/{}|^`", "http://example.com/%7B%7D|^%60"},
	}
	for _, tt := range tests {
		got, err := Normalize(tt.in)
		if err != nil {
			t.Errorf("Normalize(%q): %v", tt.in, err)
			continue
		}
		if got != tt.want {
			t.Errorf("Normalize(%q) = %q, want %q", tt.in, got, tt.want)
		}
		again, err := Normalize(got)
		if err != nil || again != got {
			t.Errorf("Normalize(Normalize(%q)) = %q, %v; want %q", tt.in, again, err, got)
		}
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		in     string
		scheme bool // error wraps ErrUnsupportedScheme
	}{
		{"", false},
		{"/relative/path", false},
		{"example.com", false},
		{"http://", false},
		{"http://exa mple.com/", false},
		{"http://example.com:65536/", false},
		{"http://example.com:12a/", false},
		{"http://[::1/", false},
		{"http://1.2.3.4.5/", false},
		{"ftp://example.com/", true},
		{"javascript:alert(1)", true},
		{"mailto:a@example.com", true},
		{"data:text/html,hi", true},
		{"file:///etc/passwd", true},
		{"http://example.com/" + strings.Repeat("a", MaxLength), false},
	}
	for _, tt := range tests {
		u, err := Parse(tt.in)
		if err == nil {
			t.Errorf("Parse(%q) = %v, want error", tt.in, u)
			continue
		}
		if !strings.HasPrefix(err.Error(), "urlx: ") {
			t.Errorf("Parse(%q) error %q lacks package prefix", tt.in, err)
		}
		if got := errors.Is(err, ErrUnsupportedScheme); got != tt.scheme {
			t.Errorf("Parse(%q) error %v: errors.Is(ErrUnsupportedScheme) = %v", tt.in, err, got)
		}
	}
	_, err := Parse("ftp://example.com/")
	if err == nil || !strings.Contains(err.Error(), `"ftp"`) {
		t.Errorf("Parse(ftp) error %v does not name the scheme", err)
	}
}

func TestResolve(t *testing.T) {
	base, err := Parse("http://www.example.com:8080/a/b/c.html?x=1#top")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		ref, want string
	}{
		{"", "http://www.example.com:8080/a/b/c.html?x=1"},
		{"#f", "http://www.example.com:8080/a/b/c.html?x=1"},
		{"d.html", "http://www.example.com:8080/a/b/d.html"},
		{"./d.html", "http://www.example.com:8080/a/b/d.html"},
		{"../d.html", "http://www.example.com:8080/a/d.html"},
		{"../../../../d.html", "http://www.example.com:8080/d.html"},
		{".", "http://www.example.com:8080/a/b/"},
		{"..", "http://www.example.com:8080/a/"},
		{"/", "http://www.example.com:8080/"},
		{"/x/./y/../z?q=%7e", "http://www.example.com:8080/x/z?q=~"},
		{"?y=2", "http://www.example.com:8080/a/b/c.html?y=2"},
		{"?", "http://www.example.com:8080/a/b/c.html"},
		{"//other.example.org/p", "http://other.example.org/p"},
		{"//other.example.org:80", "http://other.example.org/"},
		{"https://secure.example.com/", "https://secure.example.com/"},
		{"HTTPS://Secure.Example.COM:443", "https://secure.example.com/"},
		{"d e.html", "http://www.example.com:8080/a/b/d%20e.html"},
		{"\\x\\y", "http://www.example.com:8080/x/y"},
		{"http:d.html", "http://www.example.com:8080/a/b/d.html"},
		{"a:b", ""},
		{"d:e/f", ""},
		{"x/y:z", "http://www.example.com:8080/a/b/x/y:z"},
		{"%2e%2e/q", "http://www.example.com:8080/a/q"},
		{"  /trim  ", "http://www.example.com:8080/trim"},
		{"javascript:void(0)", ""},
		{"mailto:someone@example.com", ""},
		{"tel:+123", ""},
		{"//", ""},
	}
	for _, tt := range tests {
		got, err := base.Resolve(tt.ref)
		if tt.want == "" {
			if err == nil {
				t.Errorf("Resolve(%q) = %q, want error", tt.ref, got)
			}
			continue
		}
		if err != nil {
			t.Errorf("Resolve(%q): %v", tt.ref, err)
			continue
		}
		if got.String() != tt.want {
			t.Errorf("Resolve(%q) = %q, want %q", tt.ref, got, tt.want)
		}
	}
	if _, err := (URL{}).Resolve("/x"); !errors.Is(err, ErrInvalidBase) {
		t.Errorf("zero URL Resolve error = %v, want ErrInvalidBase", err)
	}
}

func TestAccessors(t *testing.T) {
	tests := []struct {
		in                                             string
		host, port, pq, auth, schemeAuth, hostPort, hn string
		path, query                                    string
	}{
		{"http://Example.com/a?b", "example.com", "", "/a?b", "example.com", "http://example.com", "example.com:80", "example.com", "/a", "b"},
		{"https://example.com:8443", "example.com", "8443", "/", "example.com:8443", "https://example.com:8443", "example.com:8443", "example.com", "/", ""},
		{"https://[::1]/x", "[::1]", "", "/x", "[::1]", "https://[::1]", "[::1]:443", "::1", "/x", ""},
		{"http://[::1]:81/", "[::1]", "81", "/", "[::1]:81", "http://[::1]:81", "[::1]:81", "::1", "/", ""},
	}
	for _, tt := range tests {
		u, err := Parse(tt.in)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tt.in, err)
		}
		got := []string{u.Host, u.Port, u.PathQuery, u.Authority(), u.SchemeAuthority(), u.HostPort(), u.Hostname(), u.Path(), u.RawQuery()}
		want := []string{tt.host, tt.port, tt.pq, tt.auth, tt.schemeAuth, tt.hostPort, tt.hn, tt.path, tt.query}
		for i := range got {
			if got[i] != want[i] {
				t.Errorf("Parse(%q): accessor %d = %q, want %q", tt.in, i, got[i], want[i])
			}
		}
		if s := string(u.AppendString([]byte("x"))); s != "x"+u.String() {
			t.Errorf("AppendString = %q", s)
		}
	}
}

func TestRegisteredDomain(t *testing.T) {
	tests := []struct{ in, want string }{
		{"www.example.com", "example.com"},
		{"example.com", "example.com"},
		{"a.b.example.co.uk", "example.co.uk"},
		{"WWW.Example.COM.", "example.com"},
		{"alice.github.io", "alice.github.io"},
		{"x.alice.github.io", "alice.github.io"},
		{"github.io", "github.io"},
		{"com", "com"},
		{"co.uk", "co.uk"},
		{"localhost", "localhost"},
		{"a.b.shop.test", "shop.test"},
		{"shop.test", "shop.test"},
		{"x.y.localhost", "y.localhost"},
		{"127.0.0.1", "127.0.0.1"},
		{"[::1]", "[::1]"},
		{"xn--bcher-kva.example", "xn--bcher-kva.example"},
		{"a.xn--bcher-kva.example", "xn--bcher-kva.example"},
	}
	for _, tt := range tests {
		if got := RegisteredDomain(tt.in); got != tt.want {
			t.Errorf("RegisteredDomain(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestSURT(t *testing.T) {
	tests := []struct{ in, want string }{
		{"http://www.example.com/path?q", "http://(com,example,www,)/path?q"},
		{"https://example.com:8443/", "https://(com,example,:8443)/"},
		{"http://localhost/", "http://(localhost,)/"},
		{"http://127.0.0.1:8080/x", "http://(127.0.0.1:8080)/x"},
		{"http://[::1]/", "http://([::1])/"},
		{"http://example.com./", "http://(com,example,)/"},
	}
	for _, tt := range tests {
		u, err := Parse(tt.in)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tt.in, err)
		}
		if got := SURT(u); got != tt.want {
			t.Errorf("SURT(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestIsSpecialUseName(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{"localhost", true},
		{"LOCALHOST.", true},
		{"a.localhost", true},
		{"shop.test", true},
		{"a.b.TEST", true},
		{"x.invalid", true},
		{"www.example", true},
		{"test", true},
		{"example.com", false},
		{"www.example.com", false},
		{"mytest", false},
		{"localhost.com", false},
		{"", false},
		{"127.0.0.1", false},
	}
	for _, tt := range tests {
		if got := IsSpecialUseName(tt.in); got != tt.want {
			t.Errorf("IsSpecialUseName(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

// TestFastPathAgrees checks, on a table of references, that the fast path
// either declines or gives exactly what the WHATWG path gives.
func TestFastPathAgrees(t *testing.T) {
	base, _ := Parse("https://a.example.com/d1/d2/page?x=1")
	refs := []string{
		"http://a.com", "http://A.COM:80/x/../y", "https://b.c:0443/", "https://b.c:443",
		"http://-a-.com/", "http://a--b.com/", "http://xn--a.com/", "http://XN--nxasmq6b.com/",
		"http://1.2.3.4/", "http://1.2.3.04/", "http://256.1.1.1/", "http://1.2.3/", "http://a.1b/",
		"http://a.b1/", "http://123/", "http://0/", "http://a:0/", "http://a:65535/", "http://a:000000080/",
		"/%2E", "/%2e%2E/", "/a/%2e./b", "./", "../..", "x/./y/../../z", "?%41=%4a", "/p?q?r:s@t/u",
		"//a.b/c", "//A.B:8080?x", "/a//b", "//x.y/..", "http://a.b/c/%7Ex%7ey", "http://a.b/%",
		"http://a.b/%4", "http://a.b/%G1", "http://a.b/c%2F%2f", "http://a.b?", "http://a.b/?&", "q:1",
		"http://a.b:/", "http://a.b:8080:90/", "http://a@b/", "http://" + strings.Repeat("a", 64) + ".com/",
	}
	for _, ref := range refs {
		for _, b := range []*URL{nil, &base} {
			fast, ok := fastParse(b, ref)
			if !ok {
				continue
			}
			slow, err := slowParse(b, ref)
			if err != nil {
				t.Errorf("fast path accepted %q (base %v) = %q, slow path: %v", ref, b != nil, fast, err)
				continue
			}
			if fast != slow {
				t.Errorf("ref %q (base %v): fast %q, slow %q", ref, b != nil, fast, slow)
			}
		}
	}
}

func TestParseAllocs(t *testing.T) {
	if testing.Short() {
		t.Skip()
	}
	base, _ := Parse("http://www.example.com/dir/page.html")
	n := testing.AllocsPerRun(100, func() {
		_, _ = base.Resolve("../other/page.html?id=12")
	})
	if n > 1 {
		t.Errorf("Resolve fast path: %v allocs, want <= 1", n)
	}
}
