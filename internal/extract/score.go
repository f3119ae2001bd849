package extract

import (
	"strings"
	"unicode"
)

// Match is the overlap of an extracted text with the true text, as the
// article-extraction benchmark measures it: counts of the 4-token shingles
// (tokens are runs of letters, digits and underscores) found in both (TP),
// only in the extraction (FP) and only in the truth (FN), each counted
// with multiplicity and divided by their sum, so that long texts weigh no
// more than short ones. A text of fewer than 4 tokens is one shingle.
type Match struct {
	TP, FP, FN float64
}

// Compare returns the Match of pred against truth.
func Compare(truth, pred string) Match {
	t, p := shingles(truth), shingles(pred)
	var m Match
	for k, tc := range t {
		pc := p[k]
		m.TP += float64(min(tc, pc))
		m.FN += float64(max(0, tc-pc))
	}
	for k, pc := range p {
		m.FP += float64(max(0, pc-t[k]))
	}
	if s := m.TP + m.FP + m.FN; s > 0 {
		m.TP, m.FP, m.FN = m.TP/s, m.FP/s, m.FN/s
	}
	return m
}

// Precision is TP/(TP+FP): 1 for a perfect match, 0 for an empty one.
func (m Match) Precision() float64 {
	switch {
	case m.FP == 0 && m.FN == 0:
		return 1
	case m.TP == 0 && m.FP == 0:
		return 0
	}
	return m.TP / (m.TP + m.FP)
}

// Recall is TP/(TP+FN), with Precision's special cases.
func (m Match) Recall() float64 {
	switch {
	case m.FP == 0 && m.FN == 0:
		return 1
	case m.TP == 0 && m.FN == 0:
		return 0
	}
	return m.TP / (m.TP + m.FN)
}

// Scores are a set's figures as the benchmark computes them: precision is
// the mean over the pages where something was extracted (TP+FP > 0),
// recall the mean over the pages with true text (TP+FN > 0), F1 their
// harmonic mean, accuracy the share of pages whose tokens equal the
// truth's exactly.
type Scores struct {
	Precision, Recall, F1, Accuracy float64
}

// Summarize returns the Scores of matches; exact counts the pages whose
// token lists were equal.
func Summarize(matches []Match, exact int) Scores {
	var s Scores
	var np, nr int
	for _, m := range matches {
		if m.TP+m.FP > 0 {
			s.Precision += m.Precision()
			np++
		}
		if m.TP+m.FN > 0 {
			s.Recall += m.Recall()
			nr++
		}
	}
	if np > 0 {
		s.Precision /= float64(np)
	}
	if nr > 0 {
		s.Recall /= float64(nr)
	}
	if s.Precision+s.Recall > 0 {
		s.F1 = 2 * s.Precision * s.Recall / (s.Precision + s.Recall)
	}
	if len(matches) > 0 {
		s.Accuracy = float64(exact) / float64(len(matches))
	}
	return s
}

// SameTokens reports whether a and b have the same tokens.
func SameTokens(a, b string) bool {
	return strings.Join(tokens(a), " ") == strings.Join(tokens(b), " ")
}

// tokens splits s into runs of letters, digits and underscores (Python's
// \w+).
func tokens(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool {
		return !(unicode.IsLetter(r) || unicode.IsNumber(r) || r == '_')
	})
}

// shingles counts the 4-token shingles of s.
func shingles(s string) map[string]int {
	const n = 4
	toks := tokens(s)
	out := make(map[string]int, len(toks))
	if len(toks) == 0 {
		return out
	}
	for i := 0; i < max(1, len(toks)-n+1); i++ {
		out[strings.Join(toks[i:min(i+n, len(toks))], "\x00")]++
	}
	return out
}
