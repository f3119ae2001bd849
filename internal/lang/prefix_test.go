package lang

import (
	"os"
	"strings"
	"testing"
	"time"
)

// TestPrefixCost measures what detecting on the first N KiB of a long
// text costs and loses against detecting on all of it: on the man pages
// under /usr/share/man of at least 16 KiB of text (roff stripped), for N
// of 1 to 16 KiB, the share whose top language is the page's locale's,
// the share that agrees with the whole text's, and the time a call takes.
// The crawler detects a page's languages on a prefix of its text; this is
// how that prefix was chosen. It runs only with PETREL_LANG_BENCH=1.
func TestPrefixCost(t *testing.T) {
	if os.Getenv("PETREL_LANG_BENCH") == "" {
		t.Skip("set PETREL_LANG_BENCH=1 to measure detection on text prefixes")
	}
	texts, labels := longManTexts(t, "/usr/share/man", 16<<10, 40)
	if len(texts) == 0 {
		t.Skip("no long man pages")
	}
	Detect(texts[0]) // the model loads once, outside the timings
	full := make([]string, len(texts))
	for i, s := range texts {
		full[i] = topCode(Detect(s))
	}
	for _, kib := range []int{1, 2, 4, 8, 16, 1 << 20} {
		right, same := 0, 0
		start := time.Now()
		for range 3 {
			for _, s := range texts {
				Detect(head(s, kib<<10))
			}
		}
		per := time.Since(start) / time.Duration(3*len(texts))
		for i, s := range texts {
			got := topCode(Detect(head(s, kib<<10)))
			if got == labels[i] {
				right++
			}
			if got == full[i] {
				same++
			}
		}
		t.Logf("first %7d KiB: %d texts, right %.3f, as the whole text %.3f, %v a call",
			kib, len(texts), float64(right)/float64(len(texts)), float64(same)/float64(len(texts)), per)
	}
}

func topCode(s []Share) string {
	if len(s) == 0 {
		return ""
	}
	return s[0].Code
}

// longManTexts returns the text (one paragraph a line) of the man pages
// under dir with at least min bytes of it, at most per a language, and
// each one's language (its locale's; English for man*/).
func longManTexts(t *testing.T, dir string, min, per int) (texts, labels []string) {
	dirs, err := manDirs(dir)
	if err != nil {
		t.Skip(err)
	}
	for _, d := range dirs {
		code, n := d.code, 0
		for _, f := range d.files {
			if n >= per {
				break
			}
			src, err := readManPage(f)
			if err != nil {
				continue
			}
			text := strings.Join(roffText(string(src)), "\n")
			if len(text) < min {
				continue
			}
			texts, labels = append(texts, text), append(labels, code)
			n++
		}
	}
	return texts, labels
}
