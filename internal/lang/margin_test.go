package lang

import (
	"math"
	"os"
	"testing"
	"time"
)

// TestStopMargin measures what stopping a chunk's scoring early costs and
// saves: for leads of several sizes, Detect's first language against the
// label and against scoring every gram, on the held-out translation
// samples and the man-page samples of the benchmark (300 bytes each) and
// on the first 4 KiB of long man pages (the crawler's case: chunks of up
// to maxAsk bytes); with the grams scored a chunk and the time of a call.
// It runs only with PETREL_LANG_BENCH=1.
func TestStopMargin(t *testing.T) {
	if os.Getenv("PETREL_LANG_BENCH") == "" {
		t.Skip("set PETREL_LANG_BENCH=1 to measure the early stop")
	}
	sets := marginSets(t)
	m := loadModel()
	for _, margin := range []int32{math.MaxInt32, 8000, 4000, 3000, 2000, 1500, 1000, 500} {
		for _, set := range sets {
			grams, chunks := 0, 0
			detect := func(c string) string {
				sc := mainScript(c)
				if m.tables[sc] == nil {
					return m.detect(c)
				}
				l, n := m.tables[sc].score(c, margin)
				grams, chunks = grams+n, chunks+1
				return m.codes[l]
			}
			right, same := 0, 0
			start := time.Now()
			for i, s := range set.texts {
				got := topCode(shares(s, detect))
				right += b2i(got == set.labels[i])
				same += b2i(got == set.full[i])
			}
			per := time.Since(start) / time.Duration(len(set.texts))
			t.Logf("margin %10d %-9s %4d texts: right %.4f, as every gram %.4f, %4.0f grams a chunk, %v a text",
				margin, set.name, len(set.texts), ratio(right, len(set.texts)), ratio(same, len(set.texts)), float64(grams)/float64(max(chunks, 1)), per)
		}
	}
}

// marginSet is labelled texts and the first language Detect names for
// each scoring every gram.
type marginSet struct {
	name                string
	texts, labels, full []string
}

// marginSets returns the sets TestStopMargin measures on, the texts all
// in a script of several languages of the model.
func marginSets(t *testing.T) []marginSet {
	c, err := readCorpus("/usr/share/locale")
	if err != nil {
		t.Skip(err)
	}
	o := BenchOptions{}
	o.defaults()
	mo, err := loadSamples(c, o)
	if err != nil {
		t.Skip(err)
	}
	man, _, err := loadManSamples("/usr/share/man", o, c.trainedKeys())
	if err != nil {
		t.Skip(err)
	}
	long, labels := longManTexts(t, "/usr/share/man", 16<<10, 40)
	sets := []marginSet{{name: "mo"}, {name: "man"}, {name: "man-4KiB"}}
	for i, ss := range [][]sample{mo, man} {
		for _, s := range ss {
			sets[i].texts, sets[i].labels = append(sets[i].texts, s.text), append(sets[i].labels, s.code)
		}
	}
	for i, s := range long {
		sets[2].texts, sets[2].labels = append(sets[2].texts, head(s, 4<<10)), append(sets[2].labels, labels[i])
	}
	m := loadModel()
	for i := range sets {
		var keep marginSet
		keep.name = sets[i].name
		for j, s := range sets[i].texts {
			if m.tables[mainScript(s)] == nil {
				continue
			}
			keep.texts, keep.labels = append(keep.texts, s), append(keep.labels, sets[i].labels[j])
			keep.full = append(keep.full, topCode(shares(s, m.detectEvery)))
		}
		sets[i] = keep
	}
	return sets
}
