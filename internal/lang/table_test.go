package lang

import (
	"math"
	"os"
	"strings"
	"testing"
)

// detectSparse is the language of chunk by the model file f scored
// entry by entry, bucket by bucket: what the tables compute, written the
// plain way.
func detectSparse(f *modelFile, chunk string) string {
	sc := mainScript(chunk)
	bit := uint32(1) << sc
	cand, only := 0, -1
	for l, s := range f.scripts {
		if s&bit != 0 {
			cand++
			only = l
		}
	}
	switch {
	case sc == scriptNone || cand == 0:
		return ""
	case cand == 1:
		return f.codes[only]
	}
	var score [maxLanguage + 1]int32
	grams(chunk, func(h uint32, _ int) bool {
		b := h >> (32 - bucketBits)
		for _, e := range f.entries[f.bucket[b]:f.bucket[b+1]] {
			if e>>16 == h&0xffff {
				score[e>>8&0xff] += int32(e & 0xff)
			}
		}
		return true
	})
	best := -1
	for l, s := range f.scripts {
		if s&bit != 0 && (best < 0 || score[l] > score[best]) {
			best = l
		}
	}
	return f.codes[best]
}

// detectEvery is m.detect scoring every gram of chunk.
func (m *model) detectEvery(chunk string) string {
	if t := m.tables[mainScript(chunk)]; t != nil {
		l, _ := t.score(chunk, math.MaxInt32)
		return m.codes[l]
	}
	return m.detect(chunk)
}

// TestTablesExact: scoring every gram, the tables name the language the
// plain scoring names, on the golden texts, their lines cut short, and
// (with PETREL_LANG_BENCH=1) every held-out translation sample.
func TestTablesExact(t *testing.T) {
	f, err := decodeModel(modelBin)
	if err != nil {
		t.Fatal(err)
	}
	m := loadModel()
	var texts []string
	for _, g := range goldenTexts {
		for n := 8; n < len(g.text)+8; n += 8 {
			texts = append(texts, head(g.text, n))
		}
	}
	texts = append(texts, strings.Repeat(english, 40), strings.Repeat(german+chinese, 20))
	if _, err := os.Stat("/usr/share/locale"); err == nil && os.Getenv("PETREL_LANG_BENCH") != "" {
		c, err := readCorpus("/usr/share/locale")
		if err != nil {
			t.Fatal(err)
		}
		samples, err := loadSamples(c, BenchOptions{Locale: "/usr/share/locale", SampleBytes: 300, PerLanguage: 50, MinSamples: 20})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range samples {
			texts = append(texts, s.text, head(s.text, 60))
		}
	}
	for _, s := range texts {
		if got, want := m.detectEvery(s), detectSparse(f, s); got != want {
			t.Errorf("detect(%.40q) = %q, the plain scoring %q", s, got, want)
		}
	}
	t.Logf("%d texts", len(texts))
}
