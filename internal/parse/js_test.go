package parse

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/petrel-crawler/petrel/internal/urlx"
)

func jsEmbeds(t *testing.T, base, js string) []string {
	t.Helper()
	b, err := urlx.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	res := JS(b, []byte(js), Options{})
	var out []string
	for _, u := range res.Embeds {
		out = append(out, u.String())
	}
	return out
}

func TestJSLiterals(t *testing.T) {
	const base = "http://docs.test/3/_static/doctools.js"
	tests := []struct {
		name string
		js   string
		want []string
	}{
		{"doctools toggler", `togglers.forEach((el) => { el.src = el.src.substr(-9) === "minus.png" ? el.src.substr(0, el.src.length - 9) + "plus.png" : el.src.substr(0, el.src.length - 8) + "minus.png"; });`,
			[]string{"http://docs.test/3/_static/minus.png", "http://docs.test/3/_static/plus.png"}},
		{"single quotes, template, absolute", "a='../img/x.GIF'; b=`/fonts/f.woff2`; c=\"http://cdn.test/y.png?v=2\"",
			[]string{"http://docs.test/3/img/x.GIF", "http://docs.test/fonts/f.woff2", "http://cdn.test/y.png?v=2"}},
		{"scripts and style sheets", `load("lib/jquery.min.js"); load('theme.css#x'); import("./m.mjs")`,
			[]string{"http://docs.test/3/_static/lib/jquery.min.js", "http://docs.test/3/_static/theme.css", "http://docs.test/3/_static/m.mjs"}},
		{"junk", `a("a b.png"); b("data:image/png;base64,AAAA.png"); c("javascript:x.png"); d("mailto:a@b.png");` +
			"e(`${dir}/x.png`); f(\"data.json\"); g(\"x.png\\n\"); h(\".png\"); i('<img src=x.png>'); j(\"png\"); k(\"file:///x.png\")", nil},
		{"template tail: a file name beside the script", "el.src = `${el.src.substr(0, el.src.length - 9)}plus.png`; b = `${x}/far.png`; c = `${n}.png`; d = `${a}b${c}`",
			[]string{"http://docs.test/3/_static/plus.png"}},
		{"comments skipped", "// \"c1.png\"\n/* 'c2.png' */ x = 'kept.svg'", []string{"http://docs.test/3/_static/kept.svg"}},
		{"unclosed quote ends at the line", "it's a \"b.png\"\nz='z.ico'", []string{"http://docs.test/3/_static/b.png", "http://docs.test/3/_static/z.ico"}},
		{"escaped quote inside", `a = 'it\'s.png'; b = "ok.webp"`, []string{"http://docs.test/3/_static/ok.webp"}},
		{"duplicates once", `"a.png" + "a.png" + './a.png'`, []string{"http://docs.test/3/_static/a.png"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := jsEmbeds(t, base, tt.js)
			if strings.Join(got, " ") != strings.Join(tt.want, " ") {
				t.Errorf("JS(%q)\n got %q\nwant %q", tt.js, got, tt.want)
			}
		})
	}
}

func TestJSLiteralsCap(t *testing.T) {
	var b strings.Builder
	for i := range MaxJSLiterals + 7 {
		fmt.Fprintf(&b, "x[%d] = 'i%d.png';\n", i, i)
	}
	base, _ := urlx.Parse("http://a.test/s.js")
	res := JS(base, []byte(b.String()), Options{})
	if len(res.Embeds) != MaxJSLiterals || res.EmbedsDropped != 7 {
		t.Fatalf("got %d embeds, %d dropped; want %d, 7", len(res.Embeds), res.EmbedsDropped, MaxJSLiterals)
	}
	res = JS(base, []byte(b.String()), Options{MaxLinks: 10})
	if len(res.Embeds) != 10 || res.EmbedsDropped != MaxJSLiterals-3 {
		t.Fatalf("MaxLinks 10: got %d embeds, %d dropped", len(res.Embeds), res.EmbedsDropped)
	}
}

func TestIsJS(t *testing.T) {
	for _, tt := range []struct {
		ct, path string
		want     bool
	}{
		{"text/javascript; charset=utf-8", "/a", true},
		{"application/javascript", "/a.css", true},
		{"", "/_static/doctools.js?v=1", true},
		{"", "/m.MJS", true},
		{"application/json", "/a.js", false},
		{"", "/a.json", false},
		{"text/css", "/a.js", false},
	} {
		h := http.Header{}
		if tt.ct != "" {
			h.Set("Content-Type", tt.ct)
		}
		if got := IsJS(h, tt.path); got != tt.want {
			t.Errorf("IsJS(%q, %q) = %v, want %v", tt.ct, tt.path, got, tt.want)
		}
	}
}

func TestInlineScriptLiterals(t *testing.T) {
	base, _ := urlx.Parse("http://a.test/dir/page.html")
	page := "<base href=/b/><script>a = '/j1.png'; b = `${d}j2.svg`</script><script type=module>x(\"j3.css\")</script>" +
		"<script src=/s.js>\"no1.png\"</script><script type=application/ld+json>{\"logo\": \"/no2.png\"}</script>" +
		"<script type=text/template>\"no3.png\"</script><p>\"no4.png\"</p>"
	var got []string
	for _, u := range HTML(base, http.Header{}, []byte(page), Options{Embeds: true, JSLiterals: true}).Embeds {
		got = append(got, u.String())
	}
	want := "http://a.test/j1.png http://a.test/b/j2.svg http://a.test/b/j3.css http://a.test/s.js"
	if strings.Join(got, " ") != want {
		t.Errorf("embeds %q, want %s", got, want)
	}
	if r := HTML(base, http.Header{}, []byte(page), Options{Embeds: true}); len(r.Embeds) != 1 {
		t.Errorf("without JSLiterals: embeds %v, want only the script", r.Embeds)
	}
}
