package filter

import (
	"errors"
	"strings"
	"testing"

	"github.com/petrel-crawler/petrel/internal/urlx"
)

func subject(t testing.TB, raw string, depth int, hops string) *Subject {
	t.Helper()
	u, err := urlx.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return NewSubject(u, depth, hops)
}

func TestPredicates(t *testing.T) {
	page := subject(t, "https://www.Example.org:8443/blog/2024/a.JPG?x=1", 3, "LLE")
	page.Status, page.ContentType, page.Duplicate = 404, "Text/HTML; charset=utf-8", true
	page.Languages = "fra,eng"
	seed := subject(t, "http://example.org/", 0, "")
	cases := []struct {
		filter     string
		page, seed bool
	}{
		{"true", true, true},
		{"false", false, false},
		{"SchemeEquals(https)", true, false},
		{"SchemeEquals(HTTP)", false, true},
		{"HostEquals(www.example.org)", true, false},
		{"HostEndsWith(.example.org)", true, false},
		{"HostEndsWith(example.org)", true, true},
		{"HostEndsWithOneOf(.net, .example.org)", true, false},
		{`HostMatchesRegex(^www\.)`, true, false},
		{"PortEquals(8443)", true, false},
		{"PortEquals(80)", false, true},
		{"PathStartsWith(/blog/)", true, false},
		{"PathEndsWithOneOf(.jpg,.png)", true, false},
		{"URLEquals(HTTP://EXAMPLE.ORG)", false, true},
		{"URLContains(/2024/)", true, false},
		{`URLMatchesRegex(.*\?x=1)`, true, false},
		{`URLMatchesRegex(x=1)`, false, false}, // anchored at both ends
		{"URLShorterThan(25)", false, true},
		{"SURTPrefix(http://(org,example,)", false, true},
		{"SURTPrefix((org,example,www,)", true, false},
		{"SURTPrefix(https://(org,example,www,:8443)/blog/)", true, false},
		{"DuplicateSegmentsLessThan(2)", true, true},
		{"DepthAtMost(2)", false, true},
		{"DepthAtMost(3)", true, true},
		{"IsSeed", false, true},
		{"LastHopIs(E,X)", true, false},
		{"ContentTypeStartsWith(text/html)", true, false},
		{"StatusCategory(4)", true, false},
		{"StatusEquals(404)", true, false},
		{"IsDuplicate", true, false},
		{"LanguageIsOneOf(FRA)", true, false},
		{"LanguageIsOneOf(deu,fra)", true, false},
		{"LanguageIsOneOf(eng)", false, false}, // the main language only
		{"LanguageIsOneOf(eng,und)", false, true},
		{"not IsSeed", true, false},
		{"!IsSeed & SchemeEquals(https)", true, false},
		{"IsSeed or SchemeEquals(https) and false", false, true}, // and binds tighter
		{"(IsSeed or SchemeEquals(https)) and not false", true, true},
		{"not not IsSeed", false, true},
		{`URLMatchesRegex("https://www\.example\.org:8443/(blog|news)/.*")`, true, false},
		{`URLMatchesRegex(https://[^/]+/(blog|news)/.*) | IsSeed`, true, true},
		{"", true, true},
	}
	for _, c := range cases {
		e, err := Parse(c.filter)
		if err != nil {
			t.Errorf("Parse(%q): %v", c.filter, err)
			continue
		}
		if got := e.Accept(page); got != c.page {
			t.Errorf("%q on the page: %v, want %v", c.filter, got, c.page)
		}
		if got := e.Accept(seed); got != c.seed {
			t.Errorf("%q on the seed: %v, want %v", c.filter, got, c.seed)
		}
		// The canonical form parses to the same decisions.
		e2, err := Parse(e.Canonical())
		if err != nil || e2.Accept(page) != c.page || e2.Accept(seed) != c.seed {
			t.Errorf("canonical form %q of %q: %v", e.Canonical(), c.filter, err)
		}
	}
}

// TestErrors: a filter that does not parse is an error naming the column.
func TestErrors(t *testing.T) {
	cases := []struct {
		filter string
		col    int
		msg    string
	}{
		{"HostEquals(a) and", 18, "ends where a predicate is expected"},
		{"HostEquals(a) HostEquals(b)", 15, "unexpected"},
		{"HostEqual(a)", 1, "did you mean HostEquals"},
		{"Frobnicate", 1, "unknown predicate"},
		{"(IsSeed or IsDuplicate", 23, `closing the "(" of column 1`},
		{"IsSeed and HostEquals(a", 22, "never closed"},
		{"HostEquals", 1, "needs a host name"},
		{"IsSeed(x)", 1, "takes no argument"},
		{"DepthAtMost(deep)", 1, "not a whole number"},
		{"StatusCategory(7)", 1, "status class"},
		{"not IsSeed and URLMatchesRegex([)", 16, "URLMatchesRegex"},
		{"LastHopIs(Q)", 1, "hop letter"},
		{"LanguageIsOneOf(en)", 1, "not an ISO 639-3 code"},
		{"LanguageIsOneOf", 1, "needs ISO 639-3 codes"},
		{`URLContains("abc)`, 13, "never closed"},
		{"IsSeed # comment", 8, "unexpected"},
		{"é or x", 1, `"é"`},
		{"IsSeed or é", 11, `"é"`},
	}
	for _, c := range cases {
		_, err := Parse(c.filter)
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("Parse(%q) = %v, want a SyntaxError", c.filter, err)
			continue
		}
		if se.Column != c.col || !strings.Contains(se.Error(), c.msg) {
			t.Errorf("Parse(%q): %q, want column %d and %q", c.filter, se.Error(), c.col, c.msg)
		}
	}
}

// TestStages: a predicate is refused where it cannot be decided, and the
// error names the setting.
func TestStages(t *testing.T) {
	ok := []Settings{
		{ScheduleFilter: "not PathEndsWithOneOf(.jpg)", FetchFilter: "HostEndsWith(.org)"},
		{ParseFilter: "ContentTypeStartsWith(text/)", FollowFilter: "not IsDuplicate", StoreFilter: "not StatusCategory(5)"},
		{StoreFilter: "LanguageIsOneOf(eng,und)", FollowFilter: "LanguageIsOneOf(eng)"},
		{ScheduleFilter: "true"},
	}
	for _, s := range ok {
		st, err := NewStages(&s)
		if err != nil {
			t.Errorf("%+v: %v", s, err)
		}
		if s.ScheduleFilter == "true" && st.Active(StageSchedule) {
			t.Error(`"true" makes an active stage`)
		}
	}
	bad := []struct {
		s    Settings
		want string
	}{
		{Settings{ScheduleFilter: "StatusCategory(2)"}, "--schedule-filter: the schedule stage comes before the response"},
		{Settings{FetchFilter: "IsDuplicate"}, "--fetch-filter"},
		{Settings{StoreFilter: "IsDuplicate"}, "--store-filter"},
		{Settings{FetchFilter: "LanguageIsOneOf(eng)"}, "--fetch-filter: the fetch stage comes before the response"},
		{Settings{FollowFilter: "IsSeed and"}, "--follow-filter: column 11"},
	}
	for _, c := range bad {
		if _, err := NewStages(&c.s); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.s, err, c.want)
		}
	}
	st, _ := NewStages(&Settings{StoreFilter: "not LanguageIsOneOf(fra)"})
	if plain, _ := NewStages(&ok[0]); !st.NeedsLanguage() || plain.NeedsLanguage() {
		t.Error("NeedsLanguage is true only when a stage's filter reads the languages")
	}
	var none *Stages
	if none.NeedsLanguage() || none.Active(StageParse) || !none.Accept(StageParse, nil) || none.Rule(StageParse) != "" {
		t.Error("a nil Stages must accept everything")
	}
}

// TestScopeFilter: --scope is shorthand for a schedule filter that decides
// as the scope does.
func TestScopeFilter(t *testing.T) {
	seeds := []string{"http://www.example.org/docs/index.html", "https://b.test/"}
	urls := []string{"http://www.example.org/docs/x", "https://www.example.org/docs/", "http://www.example.org/other",
		"http://cdn.example.org/docs/x", "http://b.test/a", "http://c.b.test/", "http://example.net/", "https://b.test/"}
	for _, kind := range []ScopeKind{ScopeAll, ScopeHost, ScopeDomain, ScopePrefix} {
		sc := NewScope(kind)
		for _, s := range seeds {
			u, _ := urlx.Parse(s)
			sc.AddSeed(u)
		}
		e, err := Parse(sc.Filter())
		if err != nil {
			t.Fatalf("%s: %q: %v", kind, sc.Filter(), err)
		}
		for _, raw := range urls {
			s := subject(t, raw, 1, "L")
			if got, want := e.Accept(s), sc.Allows(s.URL); got != want {
				t.Errorf("--scope %s as %q on %s: %v, the scope says %v", kind, sc.Filter(), raw, got, want)
			}
		}
	}
}

// FuzzParse: the parser never panics, an accepted filter's canonical form
// parses and decides the same, and an error has a column within the text.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"SchemeEquals(https) and not (HostEndsWith(.example.org) or PathEndsWithOneOf(.jpg,.png))",
		`URLMatchesRegex("a(b)c") | SURTPrefix(http://(org,example,)`, "!IsSeed & DepthAtMost(3)", "((", `"`, "not", "a(b(c)"} {
		f.Add(s)
	}
	subjects := []*Subject{subject(f, "https://www.example.org/a/b.png?q", 2, "LE"), subject(f, "http://example.org/", 0, "")}
	subjects[0].Status, subjects[0].ContentType = 200, "text/html"
	f.Fuzz(func(t *testing.T, src string) {
		e, err := Parse(src)
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("Parse(%q): %v is not a SyntaxError", src, err)
			}
			if se.Column < 1 || se.Column > len([]rune(src))+1 {
				t.Fatalf("Parse(%q): column %d outside the text", src, se.Column)
			}
			return
		}
		e2, err := Parse(e.Canonical())
		if err != nil {
			t.Fatalf("canonical form %q of %q: %v", e.Canonical(), src, err)
		}
		for _, s := range subjects {
			if e.Accept(s) != e2.Accept(s) {
				t.Fatalf("%q and its canonical form %q decide differently", src, e.Canonical())
			}
		}
	})
}

func BenchmarkSchedule(b *testing.B) {
	e := MustParse("not PathEndsWithOneOf(.jpg,.png,.gif) and (HostEndsWith(.test) or SchemeEquals(https)) and DepthAtMost(20)")
	u, _ := urlx.Parse("http://host-17.test/page/42.html")
	b.ReportAllocs()
	for b.Loop() {
		s := Subject{URL: u, Depth: 3}
		if !e.Accept(&s) {
			b.Fatal("refused")
		}
	}
}
