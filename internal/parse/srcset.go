package parse

// srcset: the image candidates of an img or source element's srcset (and of
// data-srcset), parsed by the HTML standard's "parse a srcset attribute"
// rules. A candidate whose descriptors are invalid is dropped, as a browser
// drops it; the URLs of the others are returned in order.
//
// Every descriptor is a contiguous span of the attribute value (white space
// or a comma ends one outside parentheses; inside them every byte belongs to
// it), so the descriptors are checked as spans and nothing is copied.

// nextSrcset returns the URL of the first valid image candidate of the
// srcset value v and the rest of v to parse after it; ok is false when v
// holds no more candidates.
func nextSrcset(v []byte) (url, rest []byte, ok bool) {
	for {
		// Splitting loop: skip white space and commas, then the URL is
		// the run of bytes up to white space.
		i := 0
		for i < len(v) && (isSpace(v[i]) || v[i] == ',') {
			i++
		}
		if i == len(v) {
			return nil, nil, false
		}
		j := i
		for j < len(v) && !isSpace(v[j]) {
			j++
		}
		url, v = v[i:j], v[j:]
		if url[len(url)-1] == ',' {
			for len(url) > 0 && url[len(url)-1] == ',' {
				url = url[:len(url)-1]
			}
			return url, v, true // no descriptors
		}
		var valid bool
		valid, v = srcsetDescriptors(v)
		if valid {
			return url, v, true
		}
	}
}

// srcsetDescriptors tokenizes the descriptors after a candidate's URL (the
// standard's descriptor tokenizer: white space ends a descriptor, a comma
// ends the candidate, parentheses group), checks them (the standard's
// descriptor parser) and returns whether the candidate is valid and the
// rest of v after the candidate.
func srcsetDescriptors(v []byte) (valid bool, rest []byte) {
	var d descriptorCheck
	start := -1 // start of the current descriptor, -1 when none
	parens := false
	i := 0
	for ; i < len(v); i++ {
		c := v[i]
		switch {
		case parens:
			if c == ')' {
				parens = false
			}
		case isSpace(c):
			if start >= 0 {
				d.add(v[start:i])
				start = -1
			}
		case c == ',':
			if start >= 0 {
				d.add(v[start:i])
			}
			return d.valid(), v[i+1:]
		default:
			if start < 0 {
				start = i
			}
			if c == '(' {
				parens = true
			}
		}
	}
	if start >= 0 {
		d.add(v[start:])
	}
	return d.valid(), nil
}

// descriptorCheck is the state of the standard's descriptor parser over
// one candidate's descriptors.
type descriptorCheck struct {
	err                      bool
	width, density, heightOK bool // a w, x or h descriptor was seen
}

// add checks one descriptor: "Nw" (N a non-negative integer above 0), "Nx"
// (N a valid floating-point number, not negative) or "Nh" (like w).
func (d *descriptorCheck) add(desc []byte) {
	if len(desc) < 2 {
		d.err = true
		return
	}
	num := desc[:len(desc)-1]
	switch desc[len(desc)-1] {
	case 'w':
		if d.width || d.density || !positiveInteger(num) {
			d.err = true
		}
		d.width = true
	case 'x':
		if d.width || d.density || d.heightOK || !nonNegativeFloat(num) {
			d.err = true
		}
		d.density = true
	case 'h':
		if d.heightOK || d.density || !positiveInteger(num) {
			d.err = true
		}
		d.heightOK = true
	default:
		d.err = true
	}
}

// valid reports whether the candidate's descriptors are valid: no error,
// and an h descriptor only beside a w descriptor.
func (d *descriptorCheck) valid() bool {
	return !d.err && (!d.heightOK || d.width)
}

// positiveInteger reports whether s is a valid non-negative integer (ASCII
// digits) whose value is not zero.
func positiveInteger(s []byte) bool {
	nonZero := false
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
		nonZero = nonZero || c != '0'
	}
	return len(s) > 0 && nonZero
}

// nonNegativeFloat reports whether s is a valid floating-point number of
// the HTML standard ("-"? digits ("." digits)? or "-"? "." digits, then an
// optional exponent) whose value is not below zero.
func nonNegativeFloat(s []byte) bool {
	i, neg := 0, false
	if i < len(s) && s[i] == '-' {
		i, neg = i+1, true
	}
	digits := func() (n int, nonZero bool) {
		for i < len(s) && '0' <= s[i] && s[i] <= '9' {
			nonZero = nonZero || s[i] != '0'
			i, n = i+1, n+1
		}
		return n, nonZero
	}
	n, nz := digits()
	if i < len(s) && s[i] == '.' {
		i++
		m, mz := digits()
		if m == 0 {
			return false
		}
		n, nz = n+m, nz || mz
	}
	if n == 0 {
		return false
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '-' || s[i] == '+') {
			i++
		}
		if e, _ := digits(); e == 0 {
			return false
		}
	}
	return i == len(s) && (!neg || !nz)
}
