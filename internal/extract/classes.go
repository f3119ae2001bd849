package extract

import (
	"bytes"
	"strings"

	"github.com/petrel-crawler/petrel/internal/parse"
)

// The words of class and id values that weigh a container, as Readability
// weighs them: a positive word adds 25, a negative one takes 25 away.
// An unlikely word marks the container as boilerplate unless a maybe word
// is there too. The boilerplate roles are the ARIA roles of boilerplate.
const (
	positiveWords = "article body content entry hentry h-entry main page pagination post text blog story"
	negativeWords = "hidden banner combx comment com- contact foot footer footnote gdpr masthead media meta outbrain promo related scroll share shoutbox sidebar skyscraper sponsor shopping tags tool widget"
	unlikelyWords = "-ad- ai2html banner breadcrumbs combx comment community cover-wrap disqus extra footer gdpr header legends menu related remark replies rss shoutbox sidebar skyscraper social sponsor supplemental ad-break agegate pagination pager popup yom-remote"
	maybeWords    = "and article body column content main shadow"
	boilerRoles   = "navigation complementary banner contentinfo menu menubar dialog alert"
)

// The lists of words, as the bits of a wordLists.
const (
	inPositive wordLists = 1 << iota
	inNegative
	inUnlikely
	inMaybe
	inRoles
)

// wordLists is a set of the lists of words: those a value contains a
// word of.
type wordLists uint8

// listedWord is a word and the lists it is in.
type listedWord struct {
	word  string
	lists wordLists
}

// wordIndex finds the words of all the lists in a value in one walk: the
// words by their first byte, and the pairs of bytes some word starts
// with (every word has two bytes at least), which most bytes of a value
// are not the start of.
type wordIndex struct {
	byFirst [256][]listedWord
	pairs   [1 << 16 / 64]uint64 // bit a<<8|b: a word starts with a, b
}

// classWords indexes the words of every list. It is never written after
// it is made.
var classWords = func() *wordIndex {
	x := &wordIndex{}
	for _, l := range []struct {
		words string
		in    wordLists
	}{{positiveWords, inPositive}, {negativeWords, inNegative}, {unlikelyWords, inUnlikely}, {maybeWords, inMaybe}, {boilerRoles, inRoles}} {
		for _, w := range strings.Fields(l.words) {
			x.add(w, l.in)
		}
	}
	return x
}()

// add adds the word w, of the lists in, to x.
func (x *wordIndex) add(w string, in wordLists) {
	ws := x.byFirst[w[0]]
	for i := range ws {
		if ws[i].word == w {
			ws[i].lists |= in
			return
		}
	}
	x.byFirst[w[0]] = append(ws, listedWord{w, in})
	pair := uint16(w[0])<<8 | uint16(w[1])
	x.pairs[pair/64] |= 1 << (pair % 64)
}

// lists returns the lists of which v contains a word (the words compared
// as they are: v is lower-cased by the caller).
func (x *wordIndex) lists(v []byte) wordLists {
	var in wordLists
	for i := 0; i+1 < len(v); i++ {
		pair := uint16(v[i])<<8 | uint16(v[i+1])
		if x.pairs[pair/64]&(1<<(pair%64)) == 0 {
			continue
		}
		for _, lw := range x.byFirst[v[i]] {
			if in&lw.lists != lw.lists && bytes.HasPrefix(v[i:], []byte(lw.word)) {
				in |= lw.lists
			}
		}
	}
	return in
}

// classWeight returns the weight of the class and id of the start tag
// whose attributes are a (looked up by elementAttrs), whether its role
// marks it as boilerplate and whether its class or id do.
func (p *pass) classWeight(a *parse.AttrValues) (w int16, role, unlikely bool) {
	if r, _ := a.Get(attrRole); len(r) > 0 {
		p.lower = appendLower(p.lower[:0], r)
		role = classWords.lists(p.lower)&inRoles != 0
	}
	class, _ := a.Get(attrClass)
	id, _ := a.Get(attrID)
	for _, v := range [...][]byte{class, id} {
		if len(v) == 0 {
			continue
		}
		p.lower = appendLower(p.lower[:0], v)
		in := classWords.lists(p.lower)
		if in&inNegative != 0 {
			w -= 25
		}
		if in&inPositive != 0 {
			w += 25
		}
		if in&inUnlikely != 0 && in&inMaybe == 0 {
			unlikely = true
		}
	}
	return w, role, unlikely
}

// appendLower appends v lower-cased as bytes.ToLower lower-cases it to
// dst, without allocating when v is ASCII.
func appendLower(dst, v []byte) []byte {
	n := len(dst)
	for _, c := range v {
		if c >= 0x80 {
			return append(dst[:n], bytes.ToLower(v)...)
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst
}
