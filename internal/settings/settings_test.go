package settings

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

type sample struct {
	Delay time.Duration
	N     int
	Body  int64
	F     float64
	On    bool
	Name  string
	Mode  string
	Items []string
}

func (s *sample) table() Table {
	return Table{
		Duration(&s.Delay, "delay", 2*time.Second, "a delay").In(Politeness).AtLeast(time.Duration(0)).SetLive(),
		Count(&s.N, "n", 3, "a count").In(Limits).Range(1, 10).SetFixed("why not"),
		Size(&s.Body, "body", 8<<20, "a size").In(Limits).AtLeast(int64(1024)).SetLive(),
		Float(&s.F, "f", 0.5, "a float").In(Politeness).Range(0.0, 1.0).SetLive(),
		Bool(&s.On, "on", true, "a switch").In(Operations).SetLive(),
		String(&s.Name, "name", "x", "a name").In(Seeds).SetLive(),
		Enum(&s.Mode, "mode", "a", []string{"a", "b"}, "a mode").In(Seeds).SetLive(),
		List(&s.Items, "items", nil, "a list").In(Seeds).SetLive(),
	}
}

func TestSizes(t *testing.T) {
	for in, want := range map[string]int64{"1024": 1024, "64KiB": 64 << 10, "8MiB": 8 << 20, "1GiB": 1 << 30,
		"500kB": 500000, "2MB": 2e6, "1GB": 1e9, "1.5MiB": 3 << 19, " 4 KiB ": 4096, "0": 0, "10B": 10} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "MiB", "1 parsec", "1MiBs", "-x", "99999999999GiB"} {
		if _, err := ParseSize(bad); err == nil {
			t.Errorf("ParseSize(%q) accepted", bad)
		}
	}
	for n, want := range map[int64]string{8 << 20: "8MiB", 1 << 30: "1GiB", 1024: "1KiB", 1000: "1000", 0: "0", 3 << 19: "1536KiB"} {
		if got := FormatSize(n); got != want {
			t.Errorf("FormatSize(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestValidateOneLine(t *testing.T) {
	var s sample
	tb := s.table()
	tb.Reset()
	if err := tb.Validate(); err != nil {
		t.Fatalf("defaults refused: %v", err)
	}
	for _, c := range []struct{ name, value, want string }{
		{"delay", "-1s", "--delay must be between 0s and 168h, not -1s"},
		{"n", "11", "--n must be between 1 and 10, not 11"},
		{"body", "1000", "--body must be at least 1KiB, not 1000"},
		{"f", "2", "--f must be between 0 and 1, not 2"},
		{"mode", "c", `--mode must be one of a, b, not "c"`},
	} {
		tb.Reset()
		if err := tb.Lookup(c.name).Set(c.value); err != nil {
			t.Fatal(err)
		}
		if err := tb.Validate(); err == nil || err.Error() != c.want {
			t.Errorf("--%s %s: %v, want %q", c.name, c.value, err, c.want)
		}
	}
	tb.Reset()
	if err := tb.Lookup("delay").Set("soon"); err == nil || !strings.Contains(err.Error(), "--delay") {
		t.Errorf("bad duration: %v", err)
	}
}

func TestTOML(t *testing.T) {
	var s sample
	tb := s.table()
	tb.Reset()
	doc := "delay = \"150ms\"\nbody = \"64KiB\"\nn = 4\nf = 1\non = false\nitems = [\"p\", \"q\"]\n"
	if err := tb.LoadTOML("c.toml", []byte(doc)); err != nil {
		t.Fatal(err)
	}
	if s.Delay != 150*time.Millisecond || s.Body != 64<<10 || s.N != 4 || s.F != 1 || s.On || len(s.Items) != 2 {
		t.Errorf("not read: %+v", s)
	}
	err := tb.LoadTOML("c.toml", []byte("# x\n\ndelya = \"1s\"\n"))
	if err == nil || err.Error() != `config c.toml:3: unknown setting "delya" (did you mean "delay"?)` {
		t.Errorf("unknown key: %v", err)
	}
	err = tb.LoadTOML("c.toml", []byte("n = 1\ndelay = 5\n"))
	if err == nil || !strings.HasPrefix(err.Error(), "config c.toml:2: delay:") {
		t.Errorf("wrong type: %v", err)
	}
}

// TestDefaultsRoundTrip checks that petrel config defaults loads back to
// the defaults, and the JSON form round-trips.
func TestDefaultsRoundTrip(t *testing.T) {
	var s, r sample
	tb, rt := s.table(), r.table()
	tb.Reset()
	var buf bytes.Buffer
	if err := tb.WriteDefaults(&buf); err != nil {
		t.Fatal(err)
	}
	if err := rt.LoadTOML("defaults", buf.Bytes()); err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	if r.Delay != s.Delay || r.Body != s.Body || r.Mode != s.Mode || r.F != s.F || !r.On {
		t.Errorf("defaults did not load back: %+v, want %+v", r, s)
	}
	s.Delay, s.Body, s.Items = time.Minute, 3<<20, []string{"u"}
	b, _ := json.Marshal(tb.Map())
	var m map[string]any
	json.Unmarshal(b, &m)
	if err := rt.SetMap(m); err != nil {
		t.Fatal(err)
	}
	if r.Delay != time.Minute || r.Body != 3<<20 || len(r.Items) != 1 {
		t.Errorf("JSON form did not round-trip: %s gave %+v", b, r)
	}
	if err := rt.SetMap(map[string]any{"nope": 1}); err == nil {
		t.Error("unknown name accepted")
	}
	if !strings.Contains(string(b), `"body":"3MiB"`) || !strings.Contains(string(b), `"delay":"1m0s"`) && !strings.Contains(string(b), `"delay":"1m"`) {
		t.Errorf("JSON form: %s", b)
	}
}

func TestFlags(t *testing.T) {
	var s sample
	tb := s.table()
	tb.Reset()
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	tb.Flags(fs)
	if err := fs.Parse([]string{"--body", "1MiB", "--on=false", "--items", "a,b", "--items", "c", "--delay", "1m30s"}); err != nil {
		t.Fatal(err)
	}
	if s.Body != 1<<20 || s.On || strings.Join(s.Items, " ") != "a b c" || s.Delay != 90*time.Second {
		t.Errorf("flags not applied: %+v", s)
	}
	if err := fs.Parse([]string{"--body", "1 parsec"}); err == nil || !strings.Contains(err.Error(), "64KiB") {
		t.Errorf("bad size: %v", err)
	}
	var help bytes.Buffer
	tb.Usage(&help, nil)
	for _, want := range []string{"Politeness:", "--body BYTES", "(default 8MiB)", "(default none)"} {
		if !strings.Contains(help.String(), want) {
			t.Errorf("--help lacks %q:\n%s", want, help.String())
		}
	}
}

func TestIsDefault(t *testing.T) {
	var s sample
	tb := s.table()
	tb.Reset()
	if !tb.Lookup("body").IsDefault() {
		t.Error("default not recognised")
	}
	s.Body = 1
	if tb.Lookup("body").IsDefault() {
		t.Error("changed value taken for the default")
	}
}

// TestDurationBounded: a duration setting declared with only a lower bound
// is bounded above by MaxDuration; the value that wrapped the scheduler's
// clock (2562047h) is refused on one line, from a flag and from the JSON
// form alike, and --help says the range.
func TestDurationBounded(t *testing.T) {
	var s sample
	tb := s.table()
	tb.Reset()
	d := tb.Lookup("delay")
	if err := d.Set("2562047h"); err != nil {
		t.Fatal(err)
	}
	err := tb.Validate()
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "--delay must be between 0s and 168h") {
		t.Fatalf("2562047h: %v; want a one-line refusal naming the range", err)
	}
	tb.Reset()
	if err := tb.SetMap(map[string]any{"delay": "169h"}); err != nil {
		t.Fatal(err)
	}
	if err := tb.Validate(); err == nil {
		t.Fatal("169h accepted from the JSON form")
	}
	tb.Reset()
	if err := tb.SetMap(map[string]any{"delay": "168h"}); err != nil || tb.Validate() != nil {
		t.Fatalf("168h refused: %v", tb.Validate())
	}
	var help bytes.Buffer
	tb.Usage(&help, nil)
	if !strings.Contains(help.String(), "a delay (0s to 168h) (default 2s)") {
		t.Errorf("--help does not say the range:\n%s", help.String())
	}
}
