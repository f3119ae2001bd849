package ascii

import "testing"

func TestEqualFold(t *testing.T) {
	cases := []struct {
		s, lower string
		want     bool
	}{
		{"", "", true},
		{"HTTP", "http", true},
		{"hTtPs", "https", true},
		{"http", "https", false},
		{"NoFollow", "nofollow", true},
		{"nofollow", "NoFollow", false},  // lower must be lower case
		{"\xc9t\xc9", "\xc9t\xc9", true}, // non-ASCII bytes compare as they are
		{"[", "{", false},                // '[' is not 'Z'+1 folded
	}
	for _, c := range cases {
		if got := EqualFold(c.s, c.lower); got != c.want {
			t.Errorf("EqualFold(%q, %q) = %v, want %v", c.s, c.lower, got, c.want)
		}
		if got := EqualFold([]byte(c.s), c.lower); got != c.want {
			t.Errorf("EqualFold([]byte(%q), %q) = %v, want %v", c.s, c.lower, got, c.want)
		}
	}
}
