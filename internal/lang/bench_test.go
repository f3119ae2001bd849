package lang

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"testing"
)

// TestBench runs the benchmark (RunBench) on this machine's translations
// and man pages and checks the model's accuracy on both. It reads every
// .mo file and takes minutes, so it runs only with PETREL_LANG_BENCH=1.
func TestBench(t *testing.T) {
	if os.Getenv("PETREL_LANG_BENCH") == "" {
		t.Skip("the language benchmark takes minutes: set PETREL_LANG_BENCH=1 to run it")
	}
	if _, err := os.Stat("/usr/share/locale"); err != nil {
		t.Skipf("no translations to measure on: %v", err)
	}
	o := BenchOptions{Locale: "/usr/share/locale", Repeat: 1}
	if _, err := os.Stat("/usr/share/man"); err == nil {
		o.Man = "/usr/share/man"
	}
	var js bytes.Buffer
	if err := RunBench(context.Background(), o, &js, testWriter{t}); err != nil {
		t.Fatal(err)
	}
	var rs []BenchResult
	if err := json.Unmarshal(js.Bytes(), &rs); err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if r.Name == "petrel-ngram" && r.KnownAcc < 0.9 {
			t.Errorf("%s on %s: accuracy on its languages %.3f, want at least 0.9", r.Name, r.Corpus, r.KnownAcc)
		}
	}
}

// testWriter writes to the test's log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(string(bytes.TrimRight(b, "\n")))
	return len(b), nil
}

var _ io.Writer = testWriter{}
