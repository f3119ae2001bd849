package lang

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"
)

const (
	english = "The storm petrels are the smallest of all seabirds. They spend most of their lives far out at sea and come ashore only to breed on remote islands, where they nest in burrows.\n"
	german  = "Die Sturmschwalben sind die kleinsten aller Seevögel. Sie verbringen den größten Teil ihres Lebens auf hoher See und kommen nur zum Brüten an Land, wo sie in Höhlen nisten.\n"
	chinese = "海燕是所有海鸟中最小的一种。它们一生中的大部分时间都在远离陆地的海上度过，只有在繁殖季节才会来到偏远的岛屿上，在洞穴中筑巢。\n"
)

// TestDetectOne: one language is found with a share of 1, as its ISO
// 639-3 code (a macrolanguage for Chinese: zho, not cmn).
func TestDetectOne(t *testing.T) {
	for text, want := range map[string]string{english: "eng", german: "deu", chinese: "zho"} {
		got := Detect(strings.Repeat(text, 3))
		if len(got) != 1 || got[0].Code != want || got[0].Share < 0.99 {
			t.Errorf("Detect(%.20q) = %v, want [{%s 1}]", text, got, want)
		}
	}
}

// TestDetectShares: a text two-thirds English and one-third German gives
// both, English first, with shares near 2/3 and 1/3.
func TestDetectShares(t *testing.T) {
	got := Detect(english + german + english)
	if len(got) != 2 || got[0].Code != "eng" || got[1].Code != "deu" {
		t.Fatalf("Detect = %v, want eng then deu", got)
	}
	if got[0].Share < 0.55 || got[0].Share > 0.75 || got[1].Share < 0.25 || got[1].Share > 0.45 {
		t.Errorf("shares %v, want about 2/3 and 1/3", got)
	}
}

// TestDetectLong: a long text is sampled (at most maxCalls chunks asked)
// and still gives its languages, at most three.
func TestDetectLong(t *testing.T) {
	text := strings.Repeat(english, 40) + strings.Repeat(german, 40) + strings.Repeat(chinese, 40)
	calls := 0
	got := shares(text, func(c string) string { calls++; return loadModel().detect(c) })
	if calls > maxCalls {
		t.Errorf("%d calls, want at most %d", calls, maxCalls)
	}
	if len(got) == 0 || len(got) > 3 || got[0].Code != "eng" {
		t.Errorf("Detect = %v", got)
	}
}

// TestDetectNone: no text, digits or too few letters give nil.
func TestDetectNone(t *testing.T) {
	for _, text := range []string{"", "   \n", "12345 678 90", "Hi!"} {
		if got := Detect(text); got != nil {
			t.Errorf("Detect(%q) = %v, want nil", text, got)
		}
	}
}

// TestReadMO reads a .mo file written here in both byte orders, and
// refuses other files.
func TestReadMO(t *testing.T) {
	msgs := []moMessage{{"", "Content-Type: text/plain; charset=UTF-8\n"}, {"Open file", "Datei öffnen"}, {"%d file\x00%d files", "%d Datei\x00%d Dateien"}}
	for _, bo := range []binary.ByteOrder{binary.LittleEndian, binary.BigEndian} {
		got, err := readMO(writeMO(bo, msgs))
		if err != nil {
			t.Fatal(err)
		}
		want := []moMessage{{"Open file", "Datei öffnen"}, {"%d file", "%d Datei"}}
		if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
			t.Errorf("%v: readMO = %q, want %q", bo, got, want)
		}
	}
	if _, err := readMO([]byte("msgid \"x\"\nmsgstr \"y\"\n and more text here")); err == nil {
		t.Error("a .po file read as .mo")
	}
	b := writeMO(binary.LittleEndian, msgs)
	if _, err := readMO(b[:40]); err == nil {
		t.Error("a cut .mo file read")
	}
}

// writeMO returns a .mo file of msgs.
func writeMO(bo binary.ByteOrder, msgs []moMessage) []byte {
	n := uint32(len(msgs))
	orig, trans := uint32(28), 28+8*n
	data := trans + 8*n
	var strs bytes.Buffer
	table := make([]byte, 16*n)
	for i, m := range msgs {
		for j, s := range []string{m.ID, m.Str} {
			at := 8*uint32(i) + 8*n*uint32(j)
			bo.PutUint32(table[at:], uint32(len(s)))
			bo.PutUint32(table[at+4:], data+uint32(strs.Len()))
			strs.WriteString(s)
			strs.WriteByte(0)
		}
	}
	head := make([]byte, 28)
	bo.PutUint32(head, 0x950412de)
	bo.PutUint32(head[8:], n)
	bo.PutUint32(head[12:], orig)
	bo.PutUint32(head[16:], trans)
	return append(append(head, table...), strs.Bytes()...)
}

// TestLocaleCode maps locale names to the codes Detect reports.
func TestLocaleCode(t *testing.T) {
	for name, want := range map[string]string{"de": "deu", "pt_BR": "por", "sr@latin": "srp", "zh_TW": "zho", "nb": "nor", "fa": "fas", "xx-invalid!": ""} {
		if got := localeCode(name); got != want {
			t.Errorf("localeCode(%q) = %q, want %q", name, got, want)
		}
	}
}

// BenchmarkDetect detects a page of 3 KB in two languages.
func BenchmarkDetect(b *testing.B) {
	text := strings.Repeat(english, 12) + strings.Repeat(german, 6)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		Detect(text)
	}
}

// TestHead cuts at a space or a character boundary, never inside one.
func TestHead(t *testing.T) {
	for _, c := range []struct {
		s    string
		n    int
		want string
	}{{"short", 10, "short"}, {"one two three", 9, "one two"}, {"ééééé", 5, "éé"}, {"abcdefgh", 4, "abcd"}} {
		if got := head(c.s, c.n); got != c.want {
			t.Errorf("head(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
	}
}
