package main

import (
	"strings"
	"testing"
)

// TestFlagHints: a misspelt flag is answered with the nearest one, a long
// flag given one dash is told it takes two, and the error stays one line.
func TestFlagHints(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"crawl", "--host-dely", "1s", "http://a.test/"}, "unknown flag: --host-dely (did you mean --host-delay?)"},
		{[]string{"crawl", "-host-delay", "1s", "http://a.test/"}, "-host-delay: flags take two dashes: --host-delay"},
		{[]string{"crawl", "-max-urls=5", "http://a.test/"}, "-max-urls=5: flags take two dashes: --max-urls"},
		{[]string{"crawl", "--frobnicate", "http://a.test/"}, "unknown flag: --frobnicate"},
	} {
		root := rootForTest()
		root.SetFlagErrorFunc(flagHint(c.args))
		root.SetArgs(c.args)
		err := root.Execute()
		if err == nil || err.Error() != c.want {
			t.Errorf("petrel %s: %v, want %q", strings.Join(c.args, " "), err, c.want)
		}
		if _, ok := err.(flagError); !ok {
			t.Errorf("petrel %s: %T, want a flagError (exit code 2)", strings.Join(c.args, " "), err)
		}
	}
}
