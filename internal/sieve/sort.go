package sieve

// pair is one buffered key: its hash and its arrival index in the batch.
type pair struct {
	h uint64
	i uint32
}

// sortPairs sorts ps by hash (not stably: equal hashes may come in any
// order, the merge takes the smallest arrival index of a run). It is an
// in-place MSD radix sort (American flag sort) on the hash bytes, from the
// most significant, with insertion sort for small groups; it needs no
// scratch memory beyond a few counters.
func sortPairs(ps []pair) { flagSort(ps, 56) }

func flagSort(ps []pair, shift int) {
	if len(ps) <= 48 {
		insertionSort(ps)
		return
	}
	var count [256]int
	for _, p := range ps {
		count[byte(p.h>>uint(shift))]++
	}
	var start, next [256]int
	sum := 0
	for b := range count {
		start[b] = sum
		next[b] = sum
		sum += count[b]
	}
	for b := 0; b < 256; b++ {
		end := start[b] + count[b]
		for next[b] < end {
			p := ps[next[b]]
			d := byte(p.h >> uint(shift))
			for int(d) != b {
				ps[next[d]], p = p, ps[next[d]]
				next[d]++
				d = byte(p.h >> uint(shift))
			}
			ps[next[b]] = p
			next[b]++
		}
	}
	if shift == 0 {
		return // all hashes within a group are equal
	}
	for b := 0; b < 256; b++ {
		if count[b] > 1 {
			flagSort(ps[start[b]:start[b]+count[b]], shift-8)
		}
	}
}

func insertionSort(ps []pair) {
	for i := 1; i < len(ps); i++ {
		p := ps[i]
		j := i
		for j > 0 && ps[j-1].h > p.h {
			ps[j] = ps[j-1]
			j--
		}
		ps[j] = p
	}
}
