package extract

import (
	"bytes"
	"slices"
	"sort"
	"strings"
)

// tagWeight is a container's weight for its tag, as Readability's.
func tagWeight(t tag) int16 {
	switch {
	case t.flags&(fCell|fQuote) != 0:
		return 3
	case t.flags&fList != 0:
		return -3
	case t.flags&fBoiler != 0:
		return -5
	}
	return 5
}

// minScored is the length in characters below which a block does not vote.
const minScored = 25

// minText is the length in characters of a main text that choose takes
// at once; below it, as Readability does, choose tries again taking fewer
// blocks as boilerplate (first none by class or id, then none at all), and
// keeps the longest text found.
const minText = 500

// choose returns the blocks of the main text.
func (p *pass) choose() []Block {
	var best []Block
	bestN := -1
	for _, mask := range [...]uint8{byTag | byClass, byTag, 0} {
		out := p.chooseWith(mask)
		n := 0
		for _, b := range out {
			n += len(b.Text)
		}
		if n >= minText {
			return out
		}
		if n > bestN {
			best, bestN = out, n
		}
	}
	return best
}

// chooseWith scores the containers and returns the blocks of the main
// text, taking as boilerplate the blocks marked for a reason in mask.
func (p *pass) chooseWith(mask uint8) []Block {
	if len(p.blocks) == 0 {
		return nil
	}
	totals := p.totals(mask)
	score := p.votes(mask)
	best := int32(-1)
	for i := range p.nodes {
		if score[i] == 0 {
			continue
		}
		t := totals[i]
		score[i] *= 1 - t.linkDensity()
		if best < 0 || score[i] > score[best] {
			best = int32(i)
		}
	}
	if best < 0 {
		return p.keep(mask, func(int) bool { return true })
	}
	best = p.climb(best, score)
	return p.keep(mask, p.selection(best, score, totals))
}

// total sums a container's blocks that are not boilerplate.
type total struct {
	chars, links, commas int
}

func (t total) linkDensity() float64 {
	if t.chars == 0 {
		return 0
	}
	return float64(t.links) / float64(t.chars)
}

// totals returns the totals of every container.
func (p *pass) totals(mask uint8) []total {
	// prefix sums over blocks
	pre := make([]total, len(p.blocks)+1)
	for i, b := range p.blocks {
		pre[i+1] = pre[i]
		if b.boiler&mask != 0 {
			continue
		}
		pre[i+1].chars += int(b.chars)
		pre[i+1].links += int(b.links)
		pre[i+1].commas += int(b.commas)
	}
	out := make([]total, len(p.nodes))
	for i, n := range p.nodes {
		a, z := pre[n.first], pre[n.end]
		out[i] = total{z.chars - a.chars, z.links - a.links, z.commas - a.commas}
	}
	return out
}

// votes returns each container's score from the blocks' votes (0 for a
// container no block voted for).
func (p *pass) votes(mask uint8) []float64 {
	score := make([]float64, len(p.nodes))
	for _, b := range p.blocks {
		if b.boiler&mask != 0 || b.chars < minScored || b.Kind == Heading {
			continue
		}
		v := 1 + float64(b.commas) + min(float64(b.chars)/100, 3)
		n := b.node
		for level := 0; n >= 0 && level < 5; level++ {
			if score[n] == 0 {
				score[n] = float64(p.nodes[n].weight)
				if score[n] == 0 {
					score[n] = 1e-9
				}
			}
			switch level {
			case 0:
				score[n] += v
			case 1:
				score[n] += v / 2
			default:
				score[n] += v / float64(level*3)
			}
			n = p.nodes[n].parent
		}
	}
	return score
}

// commas counts the commas of s (Latin and CJK).
func commas(s []byte) int {
	return bytes.Count(s, []byte(",")) + bytes.Count(s, []byte("，")) + bytes.Count(s, []byte("、"))
}

// climb returns the container to take instead of best, as Readability
// moves up from its top candidate: to the nearest ancestor that holds at
// least three of the other five best containers scoring within 3/4 of it
// (the text is split between them), else to an ancestor that scores more
// than the container below it, while the scores stay above a third.
func (p *pass) climb(best int32, score []float64) int32 {
	top := make([]int32, 0, len(p.nodes))
	for i := range p.nodes {
		if score[i] != 0 && int32(i) != best {
			top = append(top, int32(i))
		}
	}
	sort.Slice(top, func(i, j int) bool { return score[top[i]] > score[top[j]] })
	var alts []int32
	for _, n := range top[:min(5, len(top))] {
		if score[n] >= 0.75*score[best] {
			alts = append(alts, n)
		}
	}
	if len(alts) >= 3 {
		for a := p.nodes[best].parent; a >= 0; a = p.nodes[a].parent {
			held := 0
			for _, n := range alts {
				held += b2i(p.ancestor(a, n))
			}
			if held >= 3 {
				return a
			}
		}
	}
	last := score[best]
	for a := p.nodes[best].parent; a >= 0; a = p.nodes[a].parent {
		if score[a] == 0 {
			continue
		}
		if score[a] < score[best]/3 {
			break
		}
		if score[a] > last {
			return a
		}
		last = score[a]
	}
	return best
}

// ancestor reports whether container a holds container n (a != n).
func (p *pass) ancestor(a, n int32) bool {
	for n = p.nodes[n].parent; n >= 0; n = p.nodes[n].parent {
		if n == a {
			return true
		}
	}
	return false
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// selection returns which blocks make the main text: those of the best
// container and of its siblings that scored near it, and the paragraphs
// beside them that read as text, less those in containers within that
// clean drops.
func (p *pass) selection(best int32, score []float64, totals []total) func(int) bool {
	parent := p.nodes[best].parent
	threshold := max(10, score[best]*0.2)
	in := make([]bool, len(p.nodes))  // within the selection
	out := make([]bool, len(p.nodes)) // cleaned out of it
	for i, n := range p.nodes {
		top := int32(i) == best || parent >= 0 && n.parent == parent && score[i] >= threshold
		up := n.parent >= 0 && in[n.parent]
		in[i] = top || up
		out[i] = up && (out[n.parent] || p.clean(int32(i), totals[i]))
	}
	lo, hi := p.nodes[best].first, p.nodes[best].end
	if parent >= 0 {
		lo, hi = p.nodes[parent].first, p.nodes[parent].end
	}
	return func(i int) bool {
		if int32(i) < lo || int32(i) >= hi {
			return false
		}
		b := p.blocks[i]
		if b.node >= 0 && in[b.node] {
			return !out[b.node]
		}
		if b.node != parent || b.Kind != Paragraph {
			return false
		}
		ld := float64(b.links) / float64(b.chars)
		return b.chars > 80 && ld < 0.25 || ld == 0 && strings.Contains(b.Text, ". ")
	}
}

// clean reports whether container n, inside the main text, is dropped
// from it: negatively named, or much of it links without the commas of
// prose (a list may be half links).
func (p *pass) clean(n int32, t total) bool {
	nd := p.nodes[n]
	if nd.weight < 0 && !nd.list {
		return true
	}
	ld := t.linkDensity()
	return t.commas < 10 && (ld > 0.2 && nd.weight < 25 && !nd.list || ld > 0.5)
}

// keep returns the blocks that in accepts and that are neither
// boilerplate nor mostly link text.
func (p *pass) keep(mask uint8, in func(int) bool) []Block {
	p.kept = p.kept[:0]
	for i, b := range p.blocks {
		if !in(i) || b.boiler&mask != 0 || b.Kind != Code && 3*b.links > 2*b.chars {
			continue
		}
		p.kept = append(p.kept, b.Block)
	}
	return slices.Clone(p.kept)
}
