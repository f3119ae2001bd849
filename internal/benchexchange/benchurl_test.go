package benchexchange

import (
	"fmt"
	"testing"
)

func TestBenchURLShape(t *testing.T) {
	for _, i := range []int{0, 7, 123456, 99999} {
		want := fmt.Sprintf("https://h%06d.petrel.test/section-%d/page-%d.html?ref=%d", i%100_000, i%37, i/37, i%7)
		if got := string(URL(nil, i)); got != want {
			t.Fatalf("%q != %q", got, want)
		}
	}
}
