package ascii

// EqualFold reports whether s equals lower, ignoring ASCII case. lower
// must be lower case: only s is folded.
func EqualFold[S ~string | ~[]byte](s S, lower string) bool {
	if len(s) != len(lower) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}
