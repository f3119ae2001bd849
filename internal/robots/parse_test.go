package robots

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// rfc9309Example is the example of RFC 9309 section 5.1.
const rfc9309Example = `User-Agent: *
Disallow: *.gif$
Disallow: /example/
Allow: /publications/

User-Agent: foobot
Disallow:/
Allow:/example/page.html
Allow:/example/allowed.gif

User-Agent: barbot
User-Agent: bazbot
Disallow: /example/page.html

User-Agent: quxbot

EOF
`

type robotsCase struct {
	agent string
	path  string
	want  bool
}

func checkRobots(t *testing.T, body string, cases []robotsCase) {
	t.Helper()
	for _, c := range cases {
		r := Parse([]byte(body), c.agent)
		if got := r.Allowed(c.path); got != c.want {
			t.Errorf("agent %q path %q: Allowed = %v, want %v", c.agent, c.path, got, c.want)
		}
	}
}

func checkRobotsOn(t *testing.T, r *Robots, cases []robotsCase) {
	t.Helper()
	for _, c := range cases {
		if got := r.Allowed(c.path); got != c.want {
			t.Errorf("path %q: Allowed = %v, want %v", c.path, got, c.want)
		}
	}
}

func TestRobotsRFC9309Example(t *testing.T) {
	checkRobots(t, rfc9309Example, []robotsCase{
		{"foobot", "/example/page.html", true},
		{"foobot", "/example/allowed.gif", true},
		{"foobot", "/other", false},
		{"FooBot/2.1 (+http://foo)", "/other", false}, // case-insensitive product token
		{"foobot", "/robots.txt", true},               // implicitly allowed
		{"barbot", "/example/page.html", false},
		{"bazbot", "/example/page.html", false},
		{"barbot", "/example/x.gif", true}, // barbot's group does not fall back to *
		{"quxbot", "/example/page.html", true},
		{"quxbot", "/a.gif", true},
		{"otherbot", "/a/b.gif", false},
		{"otherbot", "/a/b.gif?x", true}, // $ anchors at the end
		{"otherbot", "/example/", false},
		{"otherbot", "/example/deeper", false},
		{"otherbot", "/publications/", true},
		{"otherbot", "/", true},
		{"", "/example/", false}, // no token: the * group
	})
}

func TestRobotsLongestMatch(t *testing.T) {
	// RFC 9309 section 5.2.
	body := "User-Agent: foobot\nAllow: /example/page/\nDisallow: /example/page/disallowed.gif\n"
	checkRobots(t, body, []robotsCase{
		{"foobot", "/example/page/", true},
		{"foobot", "/example/page/disallowed.gif", false},
		{"foobot", "/example/page/other.gif", true},
	})
	// Allow wins ties; a longer Disallow beats a shorter Allow.
	tie := "user-agent: *\nallow: /p\ndisallow: /p\ndisallow: /page\nallow: /page/ok\n"
	checkRobots(t, tie, []robotsCase{
		{"x", "/p", true},
		{"x", "/pa", true},
		{"x", "/page", false},
		{"x", "/page/ok", true},
		{"x", "/page/nok", false},
	})
}

func TestRobotsWildcards(t *testing.T) {
	body := `User-agent: *
Disallow: /path/file-with-a-*.html
Disallow: /*.php$
Allow: /this/path/exactly$
Disallow: /this/path/
Disallow: /a/**/b
Disallow: /q?*sid=
Disallow: /star*
Allow: /star*ok$
Disallow: /end$
`
	checkRobots(t, body, []robotsCase{
		{"x", "/path/file-with-a-foo.html", false},
		{"x", "/path/file-with-a-.html", false},
		{"x", "/path/file-with-b.html", true},
		{"x", "/index.php", false},
		{"x", "/x/y.php", false},
		{"x", "/index.php?q=1", true},
		{"x", "/index.php5", true},
		{"x", "/this/path/exactly", true},
		{"x", "/this/path/exactly/more", false},
		{"x", "/this/path/other", false},
		{"x", "/a/x/y/b", false},
		{"x", "/a//b", false},
		{"x", "/ab", true},
		{"x", "/q?a=1&sid=9", false},
		{"x", "/q?a=1", true},
		{"x", "/starry", false},
		{"x", "/starry-ok", true},
		{"x", "/starry-ok-not", false},
		{"x", "/end", false},
		{"x", "/ending", true},
	})
}

func TestRobotsPercentEncoding(t *testing.T) {
	// RFC 9309 section 2.2.2, table 1, plus the reverse directions.
	cases := []struct {
		rule, path string
	}{
		{"/foo/bar?baz=quz", "/foo/bar?baz=quz"},
		{"/foo/bar?baz=https://foo.bar", "/foo/bar?baz=https%3A%2F%2Ffoo.bar"},
		{"/foo/bar?baz=https%3A%2F%2Ffoo.bar", "/foo/bar?baz=https://foo.bar"},
		{"/foo/bar/ツ", "/foo/bar/%E3%83%84"},
		{"/foo/bar/%E3%83%84", "/foo/bar/%E3%83%84"},
		{"/foo/bar/%e3%83%84", "/foo/bar/%E3%83%84"},
		{"/foo/bar/%E3%83%84", "/foo/bar/ツ"},
		{"/foo/bar/%62%61%7A", "/foo/bar/baz"},
		{"/foo/bar/baz", "/foo/bar/%62%61%7a"},
	}
	for _, c := range cases {
		r := Parse([]byte("User-agent: *\nDisallow: "+c.rule+"\n"), "petrel")
		if r.Allowed(c.path) {
			t.Errorf("rule %q should match %q", c.rule, c.path)
		}
	}
	// RFC 9309 figure 6: percent-encoded '*' and '$' in a pattern are the
	// literal characters, not a wildcard or an anchor.
	literal := Parse([]byte("User-agent: *\nDisallow: /path/file-with-a-%2A.html\nDisallow: /path/foo-%24\n"), "petrel")
	for path, want := range map[string]bool{
		"/path/file-with-a-*.html":   false,
		"/path/file-with-a-%2A.html": false,
		"/path/file-with-a-%2a.html": false,
		"/path/file-with-a-x.html":   true, // %2A is no wildcard
		"/path/foo-$":                false,
		"/path/foo-%24":              false,
		"/path/foo-$/more":           false, // %24 is no anchor
		"/path/foo-":                 true,
	} {
		if got := literal.Allowed(path); got != want {
			t.Errorf("figure 6 rules, path %q: Allowed = %v, want %v", path, got, want)
		}
	}
	// A '$' inside a pattern is a literal too; only the last one anchors.
	mid := Parse([]byte("User-agent: *\nDisallow: /a$b\nDisallow: /c$d$\n"), "petrel")
	checkRobotsOn(t, mid, []robotsCase{
		{"", "/a$b", false}, {"", "/a$bc", false}, {"", "/ab", true},
		{"", "/c$d", false}, {"", "/c%24d", false}, {"", "/c$de", true},
	})
	// Reserved characters stay distinct in the path.
	r := Parse([]byte("User-agent: *\nDisallow: /a%2Fb\n"), "petrel")
	if !r.Allowed("/a/b") {
		t.Error("%2F in a path must not match /")
	}
}

func TestRobotsGroupsAndRecords(t *testing.T) {
	body := "\xEF\xBB\xBFSitemap: https://s.test/sitemap.xml\n" +
		"Disallow: /before-any-group\n" + // ignored: outside a group
		"User-agent: petrel\r\n" +
		"Crawl-delay: 2.5\r\n" +
		"Disallow: /private # comment\r" +
		"garbage line without colon\n" +
		"Unknown-field: whatever\n" +
		"Disallow:\n" + // empty: no-op
		"\n" +
		"User-agent: *\nDisallow: /\nCrawl-delay: 9\n" +
		"User-agent: Petrel\nDisallow: /second-group\nCrawl-delay: 1\n" +
		"sitemap: https://s.test/other.xml\n"
	r := Parse([]byte(body), "Petrel/0.1 (+https://example.test/bot)")
	checkRobots(t, body, []robotsCase{
		{"Petrel/0.1", "/private/x", false},
		{"Petrel/0.1", "/second-group", false}, // groups for one token are combined
		{"Petrel/0.1", "/public", true},
		{"Petrel/0.1", "/before-any-group", true},
		{"other", "/public", false},
	})
	if got := r.CrawlDelay(); got != 2500*time.Millisecond {
		t.Errorf("CrawlDelay = %v, want 2.5s (the longest of the combined groups)", got)
	}
	if got := Parse([]byte(body), "other").CrawlDelay(); got != 9*time.Second {
		t.Errorf("* CrawlDelay = %v, want 9s", got)
	}
	if got := Parse([]byte("User-agent: *\nCrawl-delay: soon\n"), "x").CrawlDelay(); got != 0 {
		t.Errorf("bad Crawl-delay parsed as %v", got)
	}
	// RFC 9309 section 2.2.4: a record other than user-agent, allow and
	// disallow (here Crawl-delay) between two user-agent lines does not end
	// the group; both agents get its rules.
	split := "User-agent: foobot\nCrawl-delay: 5\nUser-agent: barbot\nDisallow: /\n"
	checkRobots(t, split, []robotsCase{
		{"foobot", "/x", false},
		{"barbot", "/x", false},
		{"otherbot", "/x", true},
	})
	for _, agent := range []string{"foobot", "barbot"} {
		if got := Parse([]byte(split), agent).CrawlDelay(); got != 5*time.Second {
			t.Errorf("%s CrawlDelay = %v, want 5s", agent, got)
		}
	}
	want := []string{"https://s.test/sitemap.xml", "https://s.test/other.xml"}
	if got := r.Sitemaps(); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("Sitemaps = %q, want %q", got, want)
	}
}

func TestRobotsSizeCapAndGarbage(t *testing.T) {
	var b bytes.Buffer
	b.WriteString("User-agent: *\nDisallow: /early\n")
	for b.Len() < MaxSize-10 {
		b.WriteString("# padding padding padding padding padding padding\n")
	}
	b.WriteString("\nDisallow: /late-but-cut\n")
	r := Parse(b.Bytes(), "petrel")
	if r.Allowed("/early") {
		t.Error("rule before the cap ignored")
	}
	if !r.Allowed("/late-but-cut") {
		t.Error("rule past 500 KiB applied")
	}

	garbage := make([]byte, 4096)
	for i := range garbage {
		garbage[i] = byte(i*7 + i/3)
	}
	if g := Parse(garbage, "petrel"); !g.Allowed("/anything") {
		t.Error("garbage robots.txt should allow all")
	}
	html := "<html><body>Not found: User-agent</body></html>"
	if g := Parse([]byte(html), "petrel"); !g.Allowed("/x") {
		t.Error("HTML robots.txt should allow all")
	}
}

func TestRobotsAllowAllDisallowAll(t *testing.T) {
	if !AllowAll.Allowed("/x") || AllowAll.CrawlDelay() != 0 {
		t.Error("AllowAll")
	}
	if DisallowAll.Allowed("/x") || DisallowAll.Allowed("") || !DisallowAll.Allowed("/robots.txt") {
		t.Error("DisallowAll")
	}
	var nilRobots *Robots
	if !nilRobots.Allowed("/x") {
		t.Error("nil Robots should allow")
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(rfc9309Example), "foobot", "/example/page.html")
	f.Add([]byte("User-agent: *\nDisallow: /*.php$\nAllow: /a%2F*b\n"), "petrel", "/x.php")
	f.Add([]byte("user-agent:\x00\xff\nallow:%\ndisallow:*$$\n"), "", "%%zz")
	f.Fuzz(func(t *testing.T, body []byte, agent, path string) {
		r := Parse(body, agent)
		got := r.Allowed(path)
		// Normalisation is idempotent and matching respects it.
		p := normalizePath(path)
		if q := normalizePath(p); q != p {
			t.Fatalf("normalizePath not idempotent on %q: %q then %q", path, p, q)
		}
		if path != "" && path != "/robots.txt" && p != "/robots.txt" && r.Allowed(p) != got {
			t.Fatalf("Allowed(%q) = %v but Allowed(normalised %q) = %v", path, got, p, !got)
		}
		if r.CrawlDelay() < 0 || r.CrawlDelay() > maxCrawlDelay {
			t.Fatalf("crawl delay %v out of range", r.CrawlDelay())
		}
	})
}

func BenchmarkRobotsAllowed(b *testing.B) {
	r := Parse([]byte(rfc9309Example+"\nUser-agent: petrel\nDisallow: /a/*/b$\nAllow: /a/\nDisallow: /*.gif\n"), "petrel")
	b.ReportAllocs()
	for b.Loop() {
		r.Allowed("/a/some/long/path/to/b.gif?query=1")
	}
}
