package console

import (
	"encoding/json"
	"os/exec"
	"testing"
)

// TestScriptPolling runs the console's script in Node against a fake page
// (testdata/script_harness.js: a virtual clock, answers that take 5 s, a
// fake EventSource) and judges what it did: a slow crawl never has two
// status requests at once, a hidden page polls nothing and refreshes when
// shown again, and a failed event stream is opened again after waits
// that double, starting over once one opens. Skipped without Node.
func TestScriptPolling(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("needs Node.js to run the console's script: apt-get install -y nodejs")
	}
	out, err := exec.Command(node, "testdata/script_harness.js", "assets/app.js").Output()
	if err != nil {
		t.Fatalf("the harness: %v\n%s", err, out)
	}
	var got struct {
		StatusMaxInFlight int
		StatusCallsSlow   int
		StatusCallsHidden int
		StatusCallsShown  int
		StreamsAtFirst    int
		OnerrorThrew      string
		ReopenedAfterMs   []int
		FirstClosed       bool
		ReopenedTail0     bool
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("the harness printed %q: %v", out, err)
	}
	t.Logf("%+v", got)
	if got.StatusMaxInFlight != 1 || got.StatusCallsSlow < 3 {
		t.Errorf("answers taking 5 s: %d status requests at once at most, %d in 30 s; want 1 at a time, and polling on", got.StatusMaxInFlight, got.StatusCallsSlow)
	}
	if got.StatusCallsHidden != 0 {
		t.Errorf("a hidden page made %d status requests in a minute, want none", got.StatusCallsHidden)
	}
	if got.StatusCallsShown != 1 {
		t.Errorf("a page shown again made %d status requests at once, want 1", got.StatusCallsShown)
	}
	if got.StreamsAtFirst != 1 || !got.FirstClosed || got.OnerrorThrew != "" {
		t.Errorf("the log stream: %d opened at first, the first closed on error %v, onerror threw %q", got.StreamsAtFirst, got.FirstClosed, got.OnerrorThrew)
	}
	want := []int{1000, 1000, 2000, 4000}
	if len(got.ReopenedAfterMs) != len(want) {
		t.Fatalf("the log stream reopened after %v ms, want %v", got.ReopenedAfterMs, want)
	}
	for i := range want {
		if got.ReopenedAfterMs[i] != want[i] {
			t.Errorf("the log stream reopened after %v ms, want %v (a wait that doubles, from 1 s again once a stream opened)", got.ReopenedAfterMs, want)
			break
		}
	}
	if !got.ReopenedTail0 {
		t.Error("a reopened stream asks for the last lines again (tail=200): they would show twice")
	}
}
