package lang

import "math/bits"

// A table scores a chunk's grams against the languages written in one
// script, built once from the model file. Each gram in the table of any
// of these languages has a row of their scores: dense, one byte a
// language, eight to a uint64 word, when at least denseMin of them have
// it (the common grams, which are most of a text's); else a short sparse
// list of (language, score). An open-addressed hash table maps the gram's
// hash to its row. Scoring a chunk adds each of its grams' rows: a dense
// row word by word into 16-bit lanes (the even bytes of a word in one
// accumulator, the odd in another), moved into 32-bit sums before they
// can overflow; a sparse row straight into the sums. The sums are exactly
// those of adding each gram's score language by language.
type table struct {
	langs  []uint8  // the model's languages compared: lane i is langs[i]
	words  int      // uint64 words in a dense row
	slots  []uint64 // gram hash << 32 | ref; 0 is an empty slot
	shift  uint     // a hash's first slot: its top bits after mixing
	dense  []uint64 // dense rows, words each
	sparse []uint16 // sparse rows: lane << 8 | score
}

const (
	// denseMin is the number of languages of a gram from which its row is
	// dense.
	denseMin = 8
	// denseRef marks a ref to a dense row, the rest its number; a sparse
	// row's ref is its start << 8 | its length.
	denseRef = 1 << 31
	// lanes16 keeps the even bytes of a word, each in a 16-bit lane.
	lanes16 = 0x00ff00ff00ff00ff
	// maxPending is the dense rows added before the 16-bit lanes are moved
	// into the sums: 257 scores of at most 255 fit in 16 bits.
	maxPending = 256
	// maxWords is the words of a dense row of every language of a model.
	maxWords = (maxLanguage + 1) / 8
	// hashMix spreads a gram's hash over a slot number's bits.
	hashMix = 0x9E3779B1
	// checkEvery is the grams scored between two looks at the leader's
	// margin.
	checkEvery = 64
	// stopMargin is the lead over every other language at which a chunk's
	// scoring stops: in steps of 1/scoreScale of a log-probability.
	stopMargin = 2000
)

// newTable builds the table of langs (languages of f, in increasing
// order) from f's entries.
func newTable(f *modelFile, langs []uint8) *table {
	var lane [maxLanguage + 1]int16
	for i := range lane {
		lane[i] = -1
	}
	for i, l := range langs {
		lane[l] = int16(i)
	}
	type gram struct {
		h    uint32
		from int // its entries: row[from:to]
		to   int
	}
	var grams []gram
	var row []uint16 // lane << 8 | score, grams' entries in turn
	f.each(func(h uint32, l, score uint8) {
		if lane[l] < 0 {
			return
		}
		if len(grams) == 0 || grams[len(grams)-1].h != h {
			grams = append(grams, gram{h: h, from: len(row)})
		}
		row = append(row, uint16(lane[l])<<8|uint16(score))
		grams[len(grams)-1].to = len(row)
	})
	t := &table{langs: langs, words: (len(langs) + 7) / 8}
	size := 64
	for 3*size < 4*len(grams) { // at most three quarters full
		size *= 2
	}
	t.slots = make([]uint64, size)
	t.shift = uint(32 - bits.TrailingZeros(uint(size)))
	for _, g := range grams {
		es := row[g.from:g.to]
		var ref uint32
		if len(es) >= denseMin {
			ref = denseRef | uint32(len(t.dense)/t.words)
			d := make([]uint64, t.words)
			for _, e := range es {
				d[e>>11] |= uint64(e&0xff) << (8 * (e >> 8 & 7))
			}
			t.dense = append(t.dense, d...)
		} else {
			ref = uint32(len(t.sparse))<<8 | uint32(len(es))
			t.sparse = append(t.sparse, es...)
		}
		t.insert(g.h, ref)
	}
	return t
}

// insert puts the ref of the gram of hash h in its slot.
func (t *table) insert(h, ref uint32) {
	mask := uint32(len(t.slots) - 1)
	i := h * hashMix >> t.shift
	for t.slots[i] != 0 {
		i = (i + 1) & mask
	}
	t.slots[i] = uint64(h)<<32 | uint64(ref)
}

// find returns the ref of the gram of hash h, 0 if no language of t has
// it.
func (t *table) find(h uint32) uint32 {
	mask := uint32(len(t.slots) - 1)
	for i := h * hashMix >> t.shift; ; i = (i + 1) & mask {
		s := t.slots[i]
		if s == 0 || uint32(s>>32) == h {
			return uint32(s)
		}
	}
}

// tally is the scores of a chunk being scored, by lane.
type tally struct {
	even, odd [maxWords]uint64 // dense rows' even and odd bytes, in 16-bit lanes
	pending   int              // dense rows in even and odd
	sum       [maxLanguage + 1]int32
}

// add adds the row of the gram of hash h.
func (t *table) add(a *tally, h uint32) {
	ref := t.find(h)
	switch {
	case ref == 0:
	case ref&denseRef != 0:
		i := int(ref&^denseRef) * t.words
		row := t.dense[i : i+t.words]
		even, odd := a.even[:len(row)], a.odd[:len(row)]
		for w, x := range row {
			even[w] += x & lanes16
			odd[w] += x >> 8 & lanes16
		}
		if a.pending++; a.pending == maxPending {
			a.flush(t.words)
		}
	default:
		for _, e := range t.sparse[ref>>8 : ref>>8+ref&0xff] {
			a.sum[e>>8] += int32(e & 0xff)
		}
	}
}

// flush moves the 16-bit lanes of the first words words into the sums.
func (a *tally) flush(words int) {
	for w := range words {
		e, o := a.even[w], a.odd[w]
		for k := range 4 {
			a.sum[8*w+2*k] += int32(e >> (16 * k) & 0xffff)
			a.sum[8*w+2*k+1] += int32(o >> (16 * k) & 0xffff)
		}
		a.even[w], a.odd[w] = 0, 0
	}
	a.pending = 0
}

// best returns the language of t whose grams score chunk highest, the
// first of them in t's order on a tie, scoring until one leads every
// other by stopMargin.
func (t *table) best(chunk string) uint8 {
	l, _ := t.score(chunk, stopMargin)
	return l
}

// score scores the grams of chunk until one language leads every other
// by margin (looked at every checkEvery grams) or the grams run out. It
// returns the leader, the first of them in t's order on a tie, and the
// grams scored.
func (t *table) score(chunk string, margin int32) (lead uint8, n int) {
	var a tally
	grams(chunk, func(h uint32, _ int) bool {
		t.add(&a, h)
		if n++; n%checkEvery != 0 {
			return true
		}
		a.flush(t.words)
		first, second := a.top2(len(t.langs))
		return a.sum[first]-a.sum[second] < margin
	})
	a.flush(t.words)
	first, _ := a.top2(len(t.langs))
	return t.langs[first], n
}

// top2 returns the lanes of the highest and second highest sums of the
// first n lanes (n ≥ 2), the first lane on a tie.
func (a *tally) top2(n int) (first, second int) {
	first, second = 0, -1
	for i := 1; i < n; i++ {
		switch s := a.sum[i]; {
		case s > a.sum[first]:
			first, second = i, first
		case second < 0 || s > a.sum[second]:
			second = i
		}
	}
	return first, second
}
