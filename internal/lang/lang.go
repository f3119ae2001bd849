package lang

import (
	"cmp"
	"slices"
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
	n := 0
	for rest := text; rest != ""; n++ {
		_, rest = nextChunk(rest)
	}
	var found [maxCalls]Share // languages found, with their letters as Share
	langs, total, asked := 0, 0, 0
	for i, rest := 0, text; rest != "" && asked < maxCalls; i++ {
		var chunk string
		chunk, rest = nextChunk(rest)
		if n > maxCalls && i != asked*(n-1)/(maxCalls-1) { // maxCalls evenly spaced, first and last included
			continue
		}
		asked++
		k := letters(chunk)
		total += k
		if k < minLetters {
			continue
		}
		code := detect(head(chunk, maxAsk))
		if code == "" {
			continue
		}
		l := 0
		for l < langs && found[l].Code != code {
			l++
		}
		if l == langs {
			found[l].Code, langs = code, langs+1
		}
		found[l].Share += float64(k)
	}
	return ranked(found[:langs], total)
}

// ranked turns the letters of each language found (in Share) into shares
// of total, and returns those of at least MinShare, largest first (by code
// on a tie), at most three; nil for none.
func ranked(found []Share, total int) []Share {
	if len(found) == 0 {
		return nil
	}
	out := make([]Share, 0, len(found))
	for _, f := range found {
		if s := f.Share / float64(total); s >= MinShare {
			out = append(out, Share{Code: f.Code, Share: s})
		}
	}
	slices.SortFunc(out, func(a, b Share) int {
		if a.Share != b.Share {
			return cmp.Compare(b.Share, a.Share)
		}
		return strings.Compare(a.Code, b.Code)
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
