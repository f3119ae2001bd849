package lang

import (
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Share is a language and the share of a text written in it.
type Share struct {
	// Code is the language's ISO 639-3 code (a macrolanguage's where the
	// language belongs to one: zho, not cmn).
	Code string
	// Share is the fraction of the text's letters in this language, in
	// (0, 1].
	Share float64
}

// MinShare is the smallest share Detect reports.
const MinShare = 0.05

// chunkMin is the length in bytes at which a chunk of lines is closed.
const chunkMin = 120

// minLetters is the number of letters below which a chunk is not called.
const minLetters = 12

// Detect returns the languages of text, at most three, by decreasing
// share; nil when no language could be identified (no text, too little,
// or in no script the model knows).
func Detect(text string) []Share {
	return shares(text, loadModel().detect)
}

// maxCalls bounds the chunks of one text whose language is asked: a long
// text is sampled.
const maxCalls = 4

// shares is Detect with detect identifying a chunk.
func shares(text string, detect func(string) string) []Share {
	var chunks []string
	for rest := text; rest != ""; {
		var chunk string
		chunk, rest = nextChunk(rest)
		chunks = append(chunks, chunk)
	}
	if len(chunks) > maxCalls { // maxCalls evenly spaced, first and last included
		sampled := make([]string, maxCalls)
		for i := range sampled {
			sampled[i] = chunks[i*(len(chunks)-1)/(maxCalls-1)]
		}
		chunks = sampled
	}
	by := map[string]int{}
	total := 0
	for _, chunk := range chunks {
		n := letters(chunk)
		total += n
		if n < minLetters {
			continue
		}
		if code := detect(head(chunk, maxAsk)); code != "" {
			by[code] += n
		}
	}
	if len(by) == 0 {
		return nil
	}
	out := make([]Share, 0, len(by))
	for code, n := range by {
		if s := float64(n) / float64(total); s >= MinShare {
			out = append(out, Share{Code: code, Share: s})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Share != out[j].Share {
			return out[i].Share > out[j].Share
		}
		return out[i].Code < out[j].Code
	})
	if len(out) == 0 {
		return nil
	}
	return out[:min(len(out), 3)]
}

// maxAsk bounds the bytes of a chunk whose language is asked: a longer
// chunk (a long paragraph) is asked by its first maxAsk bytes and counted
// whole.
const maxAsk = 600

// head returns the first n bytes of s or fewer, cut at a space if there
// is one, else at a character boundary.
func head(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if i := strings.LastIndexByte(s[:n], ' '); i > n/2 {
		return s[:i]
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// nextChunk returns the first chunk of text (whole lines, at least chunkMin
// bytes unless text is shorter) and the rest.
func nextChunk(text string) (chunk, rest string) {
	end := 0
	for end < len(text) && end < chunkMin {
		i := strings.IndexByte(text[end:], '\n')
		if i < 0 {
			return text, ""
		}
		end += i + 1
	}
	return text[:end], text[end:]
}

// letters counts the letters of s.
func letters(s string) int {
	n := 0
	for _, r := range s {
		if unicode.IsLetter(r) {
			n++
		}
	}
	return n
}

// macro maps individual languages to the macrolanguage Common Crawl's
// codes (from CLD2's) use.
var macro = map[string]string{
	"cmn": "zho", "zsm": "msa", "pes": "fas", "arb": "ara", "ekk": "est",
	"lvs": "lav", "swh": "swa", "azj": "aze", "uzn": "uzb", "ydd": "yid",
	"khk": "mon", "npi": "nep", "ory": "ori", "plt": "mlg", "nob": "nor",
	"gug": "grn", "quz": "que", "als": "sqi",
}

// Macro returns the ISO 639-3 code that Detect reports for code: the
// macrolanguage of an individual language that belongs to one, else code.
func Macro(code string) string {
	if m, ok := macro[code]; ok {
		return m
	}
	return code
}

// Codes writes languages as Common Crawl writes them (cc-index's
// content_languages, the CDXJ field languages, WET's
// WARC-Identified-Content-Language): their codes, largest share first,
// comma-separated; "" for none.
func Codes(shares []Share) string {
	switch len(shares) {
	case 0:
		return ""
	case 1:
		return shares[0].Code
	}
	codes := make([]string, len(shares))
	for i, s := range shares {
		codes[i] = s.Code
	}
	return strings.Join(codes, ",")
}
