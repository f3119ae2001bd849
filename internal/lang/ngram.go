package lang

import (
	"unicode"
	"unicode/utf8"
)

// maxOrder is the longest character n-gram the model counts: a text's
// grams are its letters (lower-cased) and the runs of two and three of
// them, word boundaries included as a space.
const maxOrder = 3

// grams calls fn with the hash and the order of each character n-gram of
// s, of orders 1 to maxOrder, in one pass and without allocating, until fn
// returns false. Letters are lower-cased; any run of other characters is
// one word boundary. A gram of boundaries alone, and a unigram of a
// boundary, is not called.
func grams(s string, fn func(h uint32, order int) bool) {
	var win [maxOrder]rune // the last runes, win[0] the newest; 0 before the text
	win[0] = ' '
	for i := 0; i < len(s); {
		r := rune(s[i])
		if r < utf8.RuneSelf {
			i++
			switch {
			case 'a' <= r && r <= 'z':
			case 'A' <= r && r <= 'Z':
				r += 'a' - 'A'
			default:
				r = ' '
			}
		} else {
			var n int
			r, n = utf8.DecodeRuneInString(s[i:])
			i += n
			if unicode.IsLetter(r) || unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Mc, r) {
				r = unicode.ToLower(r)
			} else {
				r = ' '
			}
		}
		if r == ' ' && win[0] == ' ' {
			continue
		}
		copy(win[1:], win[:maxOrder-1])
		win[0] = r
		h := uint32(2166136261)
		for k := range maxOrder {
			if win[k] == 0 {
				break
			}
			h = (h ^ uint32(win[k])) * 16777619
			if (k > 0 || r != ' ') && !fn(h^uint32(k)*0x9E3779B1, k+1) {
				return
			}
		}
	}
}

// script numbers a writing system; the model's languages are known by the
// scripts they are written in, and a chunk's main script picks the
// languages it is compared with.
type script uint8

// The scripts told apart. CJK is Han with Japanese kana: Chinese and
// Japanese are told apart by their grams.
const (
	scriptNone script = iota
	scriptLatin
	scriptCyrillic
	scriptGreek
	scriptArmenian
	scriptHebrew
	scriptArabic
	scriptSyriac
	scriptThaana
	scriptDevanagari
	scriptBengali
	scriptGurmukhi
	scriptGujarati
	scriptOriya
	scriptTamil
	scriptTelugu
	scriptKannada
	scriptMalayalam
	scriptSinhala
	scriptThai
	scriptLao
	scriptTibetan
	scriptMyanmar
	scriptGeorgian
	scriptHangul
	scriptEthiopic
	scriptKhmer
	scriptMongolian
	scriptCJK
	scriptOther
	numScripts
)

// scriptBlocks are the first code points of the Unicode blocks that decide
// a letter's script, in increasing order, each with the script of the code
// points from it to the next.
var scriptBlocks = [...]struct {
	from rune
	s    script
}{
	{0x0000, scriptLatin}, {0x0370, scriptGreek}, {0x0400, scriptCyrillic},
	{0x0530, scriptArmenian}, {0x0590, scriptHebrew}, {0x0600, scriptArabic},
	{0x0700, scriptSyriac}, {0x0750, scriptArabic}, {0x0780, scriptThaana},
	{0x07C0, scriptOther}, {0x0900, scriptDevanagari}, {0x0980, scriptBengali},
	{0x0A00, scriptGurmukhi}, {0x0A80, scriptGujarati}, {0x0B00, scriptOriya},
	{0x0B80, scriptTamil}, {0x0C00, scriptTelugu}, {0x0C80, scriptKannada},
	{0x0D00, scriptMalayalam}, {0x0D80, scriptSinhala}, {0x0E00, scriptThai},
	{0x0E80, scriptLao}, {0x0F00, scriptTibetan}, {0x1000, scriptMyanmar},
	{0x10A0, scriptGeorgian}, {0x1100, scriptHangul}, {0x1200, scriptEthiopic},
	{0x13A0, scriptOther}, {0x1780, scriptKhmer}, {0x1800, scriptMongolian},
	{0x18B0, scriptOther}, {0x1C80, scriptCyrillic}, {0x1C90, scriptGeorgian},
	{0x1CC0, scriptOther}, {0x1D00, scriptLatin}, {0x1F00, scriptGreek},
	{0x2000, scriptOther}, {0x2C60, scriptLatin}, {0x2C80, scriptOther},
	{0x2D00, scriptGeorgian}, {0x2D30, scriptOther}, {0x2DE0, scriptCyrillic},
	{0x2E00, scriptOther}, {0x2E80, scriptCJK}, {0xA000, scriptOther},
	{0xA640, scriptCyrillic}, {0xA6A0, scriptOther}, {0xA720, scriptLatin},
	{0xA800, scriptOther}, {0xAC00, scriptHangul}, {0xD7B0, scriptOther},
	{0xF900, scriptCJK}, {0xFB00, scriptOther}, {0xFB1D, scriptHebrew},
	{0xFB50, scriptArabic}, {0xFE00, scriptOther}, {0xFF21, scriptLatin},
	{0xFF5B, scriptOther}, {0xFF66, scriptCJK}, {0xFFA0, scriptHangul},
	{0xFFE0, scriptOther}, {0x20000, scriptCJK}, {0x32000, scriptOther},
}

// scriptOf returns the script of the letter r.
func scriptOf(r rune) script {
	if r < 0x250 {
		return scriptLatin
	}
	lo, hi := 0, len(scriptBlocks) // the last block whose from ≤ r
	for hi-lo > 1 {
		m := (lo + hi) / 2
		if scriptBlocks[m].from <= r {
			lo = m
		} else {
			hi = m
		}
	}
	return scriptBlocks[lo].s
}

// scriptCounts counts the letters of s in each script.
func scriptCounts(s string, counts *[numScripts]int) {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			i++
			if 'a' <= c|0x20 && c|0x20 <= 'z' {
				counts[scriptLatin]++
			}
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
		if unicode.IsLetter(r) {
			counts[scriptOf(r)]++
		}
	}
}

// mainScript returns the script of most of the letters of s, scriptNone
// for none.
func mainScript(s string) script {
	var counts [numScripts]int
	scriptCounts(s, &counts)
	best := scriptNone
	for sc := range numScripts {
		if counts[sc] > counts[best] {
			best = sc
		}
	}
	return best
}
