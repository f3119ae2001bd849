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

func TestEqualFoldAny(t *testing.T) {
	cases := []struct {
		a, b string
		want bool
	}{
		{"", "", true},
		{"HREF", "href", true},
		{"href", "HrEf", true},
		{"href", "hre", false},
		{"\xc9", "\xe9", false}, // no folding beyond ASCII
		{"@", "`", false},
	}
	for _, c := range cases {
		if got := EqualFoldAny([]byte(c.a), []byte(c.b)); got != c.want {
			t.Errorf("EqualFoldAny(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}
