package topn

// Top keeps the n greatest values pushed into it, by less (less(a, b):
// a ranks below b). The zero value keeps nothing; make one with New.
type Top[T any] struct {
	n    int
	less func(a, b T) bool
	h    []T
}

// New returns a Top keeping the n greatest values by less (n < 1: none).
func New[T any](n int, less func(a, b T) bool) *Top[T] {
	return &Top[T]{n: max(n, 0), less: less}
}

// Push offers v: it is kept if fewer than n values are held or it ranks
// above the least of them, which it then replaces.
func (t *Top[T]) Push(v T) {
	switch {
	case len(t.h) < t.n:
		t.h = append(t.h, v)
		t.up(len(t.h) - 1)
	case t.n > 0 && t.less(t.h[0], v):
		t.h[0] = v
		t.down(0, len(t.h))
	}
}

// Len is the number of values held.
func (t *Top[T]) Len() int { return len(t.h) }

// Sorted returns the values held, greatest first, and empties the Top.
func (t *Top[T]) Sorted() []T {
	h := t.h
	for end := len(h) - 1; end > 0; end-- {
		h[0], h[end] = h[end], h[0]
		t.down(0, end)
	}
	t.h = nil
	return h
}

func (t *Top[T]) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !t.less(t.h[i], t.h[p]) {
			return
		}
		t.h[i], t.h[p] = t.h[p], t.h[i]
		i = p
	}
}

// down sifts h[i] down within h[:end].
func (t *Top[T]) down(i, end int) {
	for {
		c := 2*i + 1
		if c >= end {
			return
		}
		if r := c + 1; r < end && t.less(t.h[r], t.h[c]) {
			c = r
		}
		if !t.less(t.h[c], t.h[i]) {
			return
		}
		t.h[i], t.h[c] = t.h[c], t.h[i]
		i = c
	}
}
