package frontier

import (
	"strings"
	"testing"
)

func TestMetaEncoding(t *testing.T) {
	m := Meta{Depth: 0x1234, Redirects: 3, Embeds: 2, Seed: 0xdeadbeef, Via: 0x0102030405060708}
	m.Path = m.Path.Push(HopLink).Push(HopRedirect).Push(HopEmbed)
	b := m.Append([]byte("x"))[1:]
	if len(b) != MetaLen || b[0] != MetaVersion {
		t.Fatalf("encoding %x: %d bytes", b, len(b))
	}
	rec := AppendRecord(nil, m, "http://a.test/")
	got, url, err := SplitRecord(rec)
	if err != nil || got != m || string(url) != "http://a.test/" {
		t.Fatalf("SplitRecord = %+v %q %v, want %+v", got, url, err, m)
	}
	if decodeMeta(string(rec)) != m {
		t.Fatal("decodeMeta of a string differs")
	}
	// Golden bytes: the format is fixed; a change needs a new version.
	const golden = "011234030200000253deadbeef0102030405060708"
	if h := strings.ToLower(hexOf(b)); h != golden {
		t.Errorf("encoding %s, want %s", h, golden)
	}
	for _, bad := range [][]byte{nil, []byte("\x01short"), append([]byte{0}, b[1:]...)} {
		if _, err := DecodeMeta(bad); err == nil {
			t.Errorf("DecodeMeta(%x) accepted", bad)
		}
	}
	if _, err := DecodeMeta(append([]byte{2}, b[1:]...)); err == nil || !strings.Contains(err.Error(), "version 2") {
		t.Errorf("a version-2 record: %v", err)
	}
}

func hexOf(b []byte) string {
	const d = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, d[c>>4], d[c&15])
	}
	return string(out)
}

func TestHopPath(t *testing.T) {
	var p HopPath
	if p.Len() != 0 || p.String() != "" || p.Last() != 0 {
		t.Fatalf("zero path: %d %q", p.Len(), p)
	}
	letters := "LLREXPLELRLE"
	for i, c := range letters {
		p = p.Push(Hop(strings.IndexRune("LREXP", c) + 1))
		want := letters[max(0, i+1-MaxPathHops) : i+1]
		if p.String() != want || p.Truncated() != (i+1 > MaxPathHops) {
			t.Fatalf("after %d hops: %q truncated=%v, want %q", i+1, p, p.Truncated(), want)
		}
	}
	if p.Last() != HopEmbed {
		t.Errorf("last hop %c", p.Last().Letter())
	}
}

func TestHopPathManifests(t *testing.T) {
	for _, c := range []struct {
		path string
		want int
	}{
		{"", 0}, {"L", 0}, {"M", 1}, {"LM", 1}, {"LMR", 1}, {"LMRR", 1}, {"LMM", 2}, {"LMRM", 2},
		{"LMML", 0}, {"MLM", 1}, {"LME", 0}, {"LLLLLLLLMMMM", 4},
	} {
		var p HopPath
		for _, r := range c.path {
			p = p.Push(Hop(strings.IndexRune("LREXPM", r) + 1))
		}
		if got := p.Manifests(); got != c.want {
			t.Errorf("%q: Manifests() = %d, want %d", c.path, got, c.want)
		}
	}
	if HopManifest.Letter() != 'M' {
		t.Errorf("manifest hop letter %c", HopManifest.Letter())
	}
}

func TestMetaNext(t *testing.T) {
	seed := Meta{Seed: 4}
	m := seed.Link(11).Redirect(12).Redirect(13)
	if m.Depth != 1 || m.Redirects != 2 || m.Embeds != 0 || m.Via != 13 || m.Seed != 4 || m.Path.String() != "LRR" {
		t.Fatalf("LRR: %+v %s", m, m.Path)
	}
	m = m.Next(HopEmbed, 14).Next(HopEmbed, 15)
	if m.Depth != 1 || m.Embeds != 2 || m.Path.String() != "LRREE" {
		t.Fatalf("LRREE: %+v %s", m, m.Path)
	}
	m = m.Link(16)
	if m.Depth != 2 || m.Redirects != 0 || m.Embeds != 0 || m.Path.String() != "LRREEL" {
		t.Fatalf("LRREEL: %+v %s", m, m.Path)
	}
	sat := Meta{Depth: 0xffff, Redirects: 0xff, Embeds: 0xff}
	if n := sat.Link(0); n.Depth != 0xffff {
		t.Error("depth wrapped")
	}
	if n := sat.Redirect(0); n.Redirects != 0xff {
		t.Error("redirects wrapped")
	}
	if n := sat.Next(HopEmbed, 0); n.Embeds != 0xff {
		t.Error("embeds wrapped")
	}
}
