package lang

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"
)

// manPerPage bounds the samples taken from one man page, so a language's
// samples come from several pages.
const manPerPage = 2

// loadManSamples makes samples of the man pages under dir: the translated
// ones of <dir>/<locale>/man*/ labelled by their locale, and English ones
// of <dir>/man*/. Each page is stripped of roff (roffText); a paragraph
// of a translated page left as in its English original (originalKeys), or
// whose letters, or those of one of its sentences, are a message the model
// was trained on (trained, by lettersKey), is left out; the rest is
// cut into samples of o.SampleBytes of whole lines, at most manPerPage a
// page and o.PerLanguage a language, pages taken in the order of their
// names' hashes. It returns the samples and the paragraphs left out as
// trained on.
func loadManSamples(dir string, o BenchOptions, trained map[string]bool) ([]sample, int, error) {
	pages := map[string][]string{} // code → page files
	dirs, err := manDirs(dir)
	if err != nil {
		return nil, 0, fmt.Errorf("lang bench: %w", err)
	}
	for _, d := range dirs {
		pages[d.code] = append(pages[d.code], d.files...)
	}
	var out []sample
	dropped := 0
	for code, files := range pages {
		ss, n := manSamplesOf(code, files, o, trained)
		out = append(out, ss...)
		dropped += n
	}
	if len(out) == 0 {
		return nil, 0, fmt.Errorf("lang bench: no man pages under %s", dir)
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].code < out[j].code || out[i].code == out[j].code && out[i].text < out[j].text
	})
	return out, dropped, nil
}

// manDir is a directory of man pages and the language they are in.
type manDir struct {
	code  string   // ISO 639-3
	files []string // sorted
}

// manDirs lists the directories of man pages under dir (a man root such
// as /usr/share/man) in its order: man*/ in English, a locale's directory
// (its man*/ subdirectories) in its locale's language; a locale without a
// code is left out.
func manDirs(dir string) ([]manDir, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []manDir
	for _, d := range entries {
		code, glob := localeCode(d.Name()), filepath.Join(dir, d.Name(), "man*", "*")
		if strings.HasPrefix(d.Name(), "man") {
			code, glob = "eng", filepath.Join(dir, d.Name(), "*")
		}
		if code == "" || !d.IsDir() {
			continue
		}
		files, _ := filepath.Glob(glob)
		sort.Strings(files)
		out = append(out, manDir{code: code, files: files})
	}
	return out, nil
}

// manSamplesOf makes the samples of one language's man pages, nil if
// fewer than o.MinSamples, and counts the paragraphs left out.
func manSamplesOf(code string, files []string, o BenchOptions, trained map[string]bool) ([]sample, int) {
	h := func(s string) uint64 { f := fnv.New64a(); f.Write([]byte(filepath.Base(s))); return f.Sum64() }
	sort.Slice(files, func(i, j int) bool {
		return h(files[i]) < h(files[j]) || h(files[i]) == h(files[j]) && files[i] < files[j]
	})
	var out []sample
	dropped := 0
	taken := map[string]bool{}
	for _, f := range files {
		if len(out) >= o.PerLanguage {
			break
		}
		src, err := readManPage(f)
		if err != nil || !utf8.Valid(src) {
			continue
		}
		original := map[string]bool{}
		if code != "eng" {
			original = originalKeys(f)
		}
		var b strings.Builder
		fromPage := 0
		for _, para := range roffText(string(src)) {
			if seenIn(para, original) {
				continue
			}
			if seenIn(para, trained) {
				dropped++
				continue
			}
			b.WriteString(para)
			b.WriteByte('\n')
			if b.Len() >= o.SampleBytes {
				if text := b.String(); !taken[text] { // a page under several names is taken once
					taken[text] = true
					out = append(out, sample{code, text})
					fromPage++
				}
				b.Reset()
				if fromPage == manPerPage || len(out) >= o.PerLanguage {
					break
				}
			}
		}
	}
	if len(out) < o.MinSamples {
		return nil, dropped
	}
	return out, dropped
}

// readManPage returns a man page's source, decompressed if its name ends
// in .gz.
func readManPage(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var r io.Reader = io.LimitReader(f, 4<<20)
	if strings.HasSuffix(name, ".gz") {
		z, err := gzip.NewReader(r)
		if err != nil {
			return nil, err
		}
		r = io.LimitReader(z, 4<<20)
	}
	var b bytes.Buffer
	_, err = b.ReadFrom(r)
	return b.Bytes(), err
}

// originalKeys returns the lettersKey of each paragraph and sentence of
// at least 12 letters of the English original of the translated man page
// <dir>/<locale>/<section>/<name>, <dir>/<section>/<name>; none if there
// is none.
func originalKeys(translated string) map[string]bool {
	section := filepath.Dir(translated)
	src, err := readManPage(filepath.Join(filepath.Dir(filepath.Dir(section)), filepath.Base(section), filepath.Base(translated)))
	keys := map[string]bool{}
	if err != nil {
		return keys
	}
	for _, para := range roffText(string(src)) {
		keys[lettersKey(para)] = true
		for _, s := range sentenceRE.Split(para, -1) {
			if k := lettersKey(s); utf8.RuneCountInString(k) >= 12 {
				keys[k] = true
			}
		}
	}
	return keys
}

// sentenceRE cuts a paragraph into sentences.
var sentenceRE = regexp.MustCompile(`[.:;!?。]\s+`)

// seenIn reports whether the letters of para, or of one of its sentences
// of at least 12 letters, are a key of trained.
func seenIn(para string, trained map[string]bool) bool {
	if trained[lettersKey(para)] {
		return true
	}
	for _, s := range sentenceRE.Split(para, -1) {
		if k := lettersKey(s); utf8.RuneCountInString(k) >= 12 && trained[k] {
			return true
		}
	}
	return false
}

var (
	// roffEscRE matches roff's escapes: fonts, sizes, special characters,
	// strings, and any other one-character escape.
	roffEscRE = regexp.MustCompile(`\\(f(\(..|\[[^\]]*\]|.)|s[-+]?\d+|\(..|\[[^\]]*\]|\*(\(..|\[[^\]]*\]|.)|.)`)
	roffRE    = strings.NewReplacer(`\-`, "-", `\&`, "", `\e`, `\`, `\ `, " ", `\~`, " ")
)

// roffEscape is what an escape is replaced with: nothing for a font or a
// size, a space for a character or a string.
func roffEscape(esc string) string {
	if esc[1] == 'f' || esc[1] == 's' {
		return ""
	}
	return " "
}

// roffText returns the running text of a man page's roff source, in
// paragraphs of joined lines: request and macro lines (a . or ' first)
// end a paragraph and are dropped with their arguments, escapes are
// removed.
func roffText(src string) []string {
	var paras []string
	var para []string
	flush := func() {
		if len(para) > 0 {
			paras = append(paras, strings.Join(para, " "))
			para = para[:0]
		}
	}
	for _, line := range strings.Split(src, "\n") {
		if strings.HasPrefix(line, ".") || strings.HasPrefix(line, "'") {
			flush()
			continue
		}
		line = roffEscRE.ReplaceAllStringFunc(roffRE.Replace(line), roffEscape)
		if line = strings.TrimSpace(line); line == "" {
			flush()
			continue
		}
		para = append(para, line)
	}
	flush()
	return paras
}
