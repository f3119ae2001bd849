package urlx

import "testing"

var benchSink URL

func BenchmarkParse(b *testing.B) {
	for _, bc := range []struct{ name, in string }{
		{"simple", "http://www.example.com/dir/page.html?id=42"},
		{"dots", "HTTP://WWW.Example.COM:80/a/./b/../c/%7euser/index.html"},
		{"idna", "http://Bücher.example/straße?q=ü"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				u, err := Parse(bc.in)
				if err != nil {
					b.Fatal(err)
				}
				benchSink = u
			}
		})
	}
}

func BenchmarkResolve(b *testing.B) {
	base, err := Parse("http://www.example.com/section/sub/page.html")
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct{ name, ref string }{
		{"relative", "../other/page.html?id=12"},
		{"absolute-path", "/news/2024/item.html"},
		{"absolute", "https://cdn.example.org/x.js"},
		{"slow", "a page with spaces.html"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				u, err := base.Resolve(bc.ref)
				if err != nil {
					b.Fatal(err)
				}
				benchSink = u
			}
		})
	}
}

func BenchmarkRegisteredDomain(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_ = RegisteredDomain("www.example.co.uk")
	}
}

func BenchmarkSURT(b *testing.B) {
	u, _ := Parse("http://www.example.com:8080/a/b?c")
	b.ReportAllocs()
	for b.Loop() {
		_ = SURT(u)
	}
}
