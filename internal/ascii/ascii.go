package ascii

// Lower returns c with an ASCII upper-case letter lower-cased.
func Lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// EqualFold reports whether s equals lower, ignoring ASCII case. lower
// must be lower case: only s is folded.
func EqualFold[S ~string | ~[]byte](s S, lower string) bool {
	if len(s) != len(lower) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if Lower(s[i]) != lower[i] {
			return false
		}
	}
	return true
}

// EqualFoldAny reports whether a and b are equal once their ASCII
// upper-case letters are lower-cased; unlike EqualFold, either side may
// hold upper case. Non-ASCII bytes compare as they are (bytes.EqualFold
// would fold them too).
func EqualFoldAny(a, b []byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if Lower(a[i]) != Lower(b[i]) {
			return false
		}
	}
	return true
}
