package store

import (
	"bytes"
	"regexp"
	"testing"
)

func TestParseResponse(t *testing.T) {
	tests := []struct {
		name    string
		raw     string
		status  int
		chunked bool
		mime    string
		header  string
		body    string
	}{
		{"plain", "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: 5\r\n\r\nhello",
			200, false, "text/html", "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: 5\r\n\r\n", "hello"},
		{"chunked mixed case", "HTTP/1.1 201 Created\r\ntransfer-ENCODING: gzip, Chunked\r\n\r\n0\r\n\r\n",
			201, true, "", "HTTP/1.1 201 Created\r\ntransfer-ENCODING: gzip, Chunked\r\n\r\n", "0\r\n\r\n"},
		{"bare LF", "HTTP/1.0 404 Not Found\nContent-Type: TEXT/Plain\n\nnope",
			404, false, "TEXT/Plain", "HTTP/1.0 404 Not Found\nContent-Type: TEXT/Plain\n\n", "nope"},
		{"cut in headers", "HTTP/1.1 200 OK\r\nContent-Ty", 200, false, "", "HTTP/1.1 200 OK\r\nContent-Ty", ""},
		{"empty", "", 0, false, "", "", ""},
		{"garbage status", "HTTP/1.1 2x0 OK\r\n\r\nbody", 0, false, "", "HTTP/1.1 2x0 OK\r\n\r\n", "body"},
		{"empty body", "HTTP/1.1 204 No Content\r\n\r\n", 204, false, "", "HTTP/1.1 204 No Content\r\n\r\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := parseResponse([]byte(tt.raw))
			if r.status != tt.status || r.chunked != tt.chunked || r.mime != tt.mime {
				t.Errorf("status, chunked, mime = %d, %v, %q; want %d, %v, %q", r.status, r.chunked, r.mime, tt.status, tt.chunked, tt.mime)
			}
			if string(r.header) != tt.header || string(r.body) != tt.body {
				t.Errorf("header, body = %q, %q; want %q, %q", r.header, r.body, tt.header, tt.body)
			}
		})
	}
}

func TestDechunk(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
		ok   bool
	}{
		{"complete", "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n", "hello world", true},
		{"extensions and trailers", "5;name=v\r\nhello\r\n0\r\nX-Trailer: y\r\n\r\n", "hello", true},
		{"upper hex", "A\r\n0123456789\r\n0\r\n\r\n", "0123456789", true},
		{"cut inside chunk", "5\r\nhello\r\n6\r\n wo", "hello wo", true},
		{"cut in size line", "5\r\nhello\r\n1", "hello", true},
		{"cut before final CRLF", "5\r\nhello", "hello", true},
		{"bare LF", "3\nabc\n0\n\n", "abc", true},
		{"not chunked", "<html>hello</html>", "", false},
		{"bad later size", "3\r\nabc\r\nzz\r\nmore", "abc", true},
		{"empty", "", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			ok := dechunk(&b, []byte(tt.in))
			if ok != tt.ok || b.String() != tt.want {
				t.Errorf("dechunk(%q) = %q, %v; want %q, %v", tt.in, b.String(), ok, tt.want, tt.ok)
			}
		})
	}
}

func TestNewRecordID(t *testing.T) {
	re := regexp.MustCompile(`^<urn:uuid:[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}>$`)
	seen := map[string]bool{}
	for range 100 {
		id := newRecordID()
		if !re.MatchString(id) {
			t.Fatalf("newRecordID() = %q, not a v4 urn:uuid", id)
		}
		if seen[id] {
			t.Fatalf("duplicate id %q", id)
		}
		seen[id] = true
	}
}

func TestSURT(t *testing.T) {
	tests := []struct{ in, want string }{
		{"https://www.Example.com/A?b=2&a=1", "com,example)/a?a=1&b=2"},
		{"http://example.com", "com,example)/"},
		{"http://example.com:80/x", "com,example)/x"},
		{"http://sub.example.co.uk:8080/p#frag", "uk,co,example,sub:8080)/p"},
		{"http://user:pw@127.0.0.1:8081/a", "1,0,0,127:8081)/a"},
		{"http://[::1]:8081/a", "[::1]:8081)/a"},
		{"http://www2.example.com/", "com,example)/"},
		{"http://wwwexample.com/", "com,wwwexample)/"},
		{"https://example.com:443/", "com,example)/"},
		{"not a url", "not a url"},
	}
	for _, tt := range tests {
		if got := SURT(tt.in); got != tt.want {
			t.Errorf("SURT(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}
}
