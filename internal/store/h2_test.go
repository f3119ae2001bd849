package store

import (
	"slices"
	"testing"

	gowarc "github.com/nlnwa/gowarc/v3"
)

// TestHTTP2Protocol: an exchange over HTTP/2 gets "WARC-Protocol: h2" and
// its TLS version's on its request record and on its response record (the
// latter once each, with the cipher suite), and so does its revisit; gowarc
// reads them without a finding. An HTTP/1.1 exchange's request record has
// no WARC-Protocol.
func TestHTTP2Protocol(t *testing.T) {
	opts := testOptions(t)
	w, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	body := "<html>h2</html>"
	tlsInfo := &TLSInfo{Protocol: "tls/1.3", CipherSuite: "TLS_AES_128_GCM_SHA256", Verify: "verified"}
	for _, ex := range []Exchange{
		{TargetURI: "https://example.test/a", IP: "127.0.0.1", Request: request("/a"), HTTP2: true, TLS: tlsInfo,
			Response: response("200 ", "Content-Length: 15\r\n", body)},
		{TargetURI: "https://example.test/b", IP: "127.0.0.1", Request: request("/b"), HTTP2: true, TLS: tlsInfo,
			Response: response("200 ", "Content-Length: 15\r\n", body)}, // a revisit
		{TargetURI: "https://example.test/c", IP: "127.0.0.1", Request: request("/c"), TLS: tlsInfo,
			Response: response("200 OK", "Content-Length: 2\r\n", "h1")},
	} {
		if _, err := w.Write(&ex); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	recs := readWARC(t, warcFiles(t, opts.Dir)[0])
	if len(recs) != 7 {
		t.Fatalf("%d records, want 7", len(recs))
	}
	want := [][]string{nil, {"h2", "tls/1.3"}, {"h2", "tls/1.3"}, {"h2", "tls/1.3"}, {"h2", "tls/1.3"}, nil, {"tls/1.3"}}
	for i, r := range recs {
		got := r.header.GetAll("WARC-Protocol")
		if !slices.Equal(got, want[i]) {
			t.Errorf("record %d (%s): WARC-Protocol %q, want %q", i, r.typ, got, want[i])
		}
		if len(r.validation) > 0 {
			t.Errorf("record %d (%s): gowarc finds %v", i, r.typ, r.validation)
		}
	}
	if recs[4].typ != gowarc.Revisit {
		t.Errorf("record 4 is a %s, want the revisit", recs[4].typ)
	}
}
