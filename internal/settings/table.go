package settings

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/spf13/pflag"
)

// A Table is the settings of a crawl, each bound to its variable. Every
// package that owns settings returns its part from a method of its
// settings struct; the agent joins them.
type Table []*Setting

// Join concatenates tables; a name declared twice panics (a programming
// error the tests of every table catch).
func Join(parts ...Table) Table {
	var t Table
	seen := map[string]bool{}
	for _, p := range parts {
		for _, s := range p {
			if seen[s.Name] {
				panic("settings: " + s.Name + " declared twice")
			}
			seen[s.Name] = true
			t = append(t, s)
		}
	}
	return t
}

// Lookup returns the setting of that name, or nil.
func (t Table) Lookup(name string) *Setting {
	for _, s := range t {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// Reset sets every default.
func (t Table) Reset() {
	for _, s := range t {
		s.Reset()
	}
}

// Validate checks every setting; the error is the first wrong one's, on
// one line.
func (t Table) Validate() error {
	for _, s := range t {
		if err := s.Validate(); err != nil {
			return err
		}
	}
	return nil
}

// Grouped returns the settings in --help order: by group, then as
// declared.
func (t Table) Grouped() Table {
	g := append(Table(nil), t...)
	sort.SliceStable(g, func(i, j int) bool { return g[i].Group < g[j].Group })
	return g
}

// Flags defines a flag for every setting on fs, setting the bound
// variables when parsed. Each flag's "group" annotation names its group.
func (t Table) Flags(fs *pflag.FlagSet) {
	for _, s := range t {
		f := fs.VarPF(&flagValue{s: s}, s.Name, "", s.Help)
		if s.Kind == KindBool {
			f.NoOptDefVal = "true"
		}
		f.DefValue = s.Default()
		f.Annotations = map[string][]string{"group": {s.Group.String()}}
	}
}

// flagValue adapts a Setting to pflag.Value; a repeated list flag appends.
type flagValue struct {
	s   *Setting
	set bool
}

func (f *flagValue) Set(text string) error {
	if f.s.Kind == KindList && f.set {
		prev := f.s.v.(*listValue)
		old := append([]string(nil), *prev.p...)
		if err := f.s.v.set(text); err != nil {
			return err
		}
		*prev.p = append(old, *prev.p...)
		return nil
	}
	f.set = true
	return f.s.v.set(text)
}

func (f *flagValue) String() string { return f.s.v.text() }

func (f *flagValue) Type() string { return f.s.placeholder() }

// LoadTOML sets the settings the TOML document names; name is the file's
// name in errors. An unknown key, or a value of the wrong type, is an error
// naming the file, the line and the key.
func (t Table) LoadTOML(name string, data []byte) error {
	var m map[string]any
	if _, err := toml.Decode(string(data), &m); err != nil {
		return fmt.Errorf("config %s: %v", name, err)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	lines := keyLines(data)
	sort.Slice(keys, func(i, j int) bool { return lines[keys[i]] < lines[keys[j]] })
	for _, k := range keys {
		where := name
		if n := lines[k]; n > 0 {
			where = fmt.Sprintf("%s:%d", name, n)
		}
		s := t.Lookup(k)
		if s == nil {
			return fmt.Errorf("config %s: unknown setting %q%s", where, k, t.suggest(k))
		}
		if err := s.SetValue(m[k]); err != nil {
			return fmt.Errorf("config %s: %v", where, err)
		}
	}
	return nil
}

var keyLine = regexp.MustCompile(`^\s*(?:\[\s*)?"?([A-Za-z0-9_.-]+)"?\s*(?:=|\])`)

// keyLines maps each top-level key of a TOML document to its line.
func keyLines(data []byte) map[string]int {
	out := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		if m := keyLine.FindStringSubmatch(sc.Text()); m != nil {
			k, _, _ := strings.Cut(m[1], ".")
			if _, ok := out[k]; !ok {
				out[k] = n
			}
		}
	}
	return out
}

// suggest names a declared setting close to a misspelt name.
func (t Table) suggest(name string) string {
	names := make([]string, len(t))
	for i, s := range t {
		names[i] = s.Name
	}
	best := Nearest(name, names)
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// Nearest is the name of names closest to a misspelt name, within two
// edits; "" when none is that close.
func Nearest(name string, names []string) string {
	best, bestD := "", 3
	for _, n := range names {
		if d := editDistance(name, n); d < bestD {
			best, bestD = n, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := prev[j-1]
			if a[i-1] != b[j-1] {
				c++
			}
			cur[j] = min(c, prev[j]+1, cur[j-1]+1)
		}
		prev = cur
	}
	return prev[len(b)]
}

// Map returns the JSON form: every setting's name and value, as the TOML
// file holds it (durations and sizes as strings: "2s", "8MiB").
func (t Table) Map() map[string]any {
	m := make(map[string]any, len(t))
	for _, s := range t {
		m[s.Name] = s.Value()
	}
	return m
}

// SetMap sets the settings m names, from the JSON form (numbers may be
// float64, as encoding/json decodes them). It stops at the first unknown
// name or bad value, which may leave earlier ones set: callers apply it to
// a copy.
func (t Table) SetMap(m map[string]any) error {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		s := t.Lookup(k)
		if s == nil {
			return fmt.Errorf("unknown setting %q%s", k, t.suggest(k))
		}
		if err := s.SetValue(m[k]); err != nil {
			return err
		}
	}
	return nil
}

// WriteDefaults writes a TOML document of every setting with its help and
// default, by group; it loads back to the defaults. Settings whose default
// depends on the machine are written commented out.
func (t Table) WriteDefaults(w io.Writer) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, "# Petrel crawl settings and their defaults (petrel config defaults).")
	fmt.Fprintln(bw, "# Give a file like this one with --config FILE; flags on the command line")
	fmt.Fprintln(bw, "# override it. Sizes take 1024, 64KiB, 8MiB, 1GiB, 500kB; durations 500ms, 2s, 1h.")
	group := Group(255)
	for _, s := range t.Grouped() {
		if s.Group != group {
			group = s.Group
			fmt.Fprintf(bw, "\n# ---- %s ----\n", group)
		}
		fmt.Fprintf(bw, "\n# %s\n# %s\n", s.Help, s.notes())
		d := s.v.clone()
		d.reset()
		if s.Machine {
			fmt.Fprintf(bw, "# %s = %s  # default: %s\n", s.Name, d.toml(), s.DefaultText)
			continue
		}
		fmt.Fprintf(bw, "%s = %s\n", s.Name, d.toml())
	}
	return bw.Flush()
}

// RangeText says the values a number setting takes ("0 to 1h", "at least
// 1", "at most 1h"), or "" when any is taken.
func (s *Setting) RangeText() string {
	switch {
	case s.lo != nil && s.hi != nil:
		return fmt.Sprintf("%s to %s", s.v.format(*s.lo), s.v.format(*s.hi))
	case s.lo != nil:
		return "at least " + s.v.format(*s.lo)
	case s.hi != nil:
		return "at most " + s.v.format(*s.hi)
	}
	return ""
}

// notes describes a setting's kind, range and liveness in a few words.
func (s *Setting) notes() string {
	parts := []string{s.Kind.String()}
	if s.Kind == KindEnum && len(s.Choices) > 0 {
		parts[0] = "one of " + strings.Join(s.Choices, ", ")
	}
	if r := s.RangeText(); r != "" {
		parts = append(parts, r)
	}
	if s.Live {
		parts = append(parts, "live")
	} else {
		parts = append(parts, "fixed: "+s.Fixed)
	}
	if s.Cluster {
		parts = append(parts, "same on every agent of a cluster")
	}
	return strings.Join(parts, "; ")
}

// Markdown writes the README's tables of settings, one per group.
// extra rows (already formatted) are added to the first group's table.
func (t Table) Markdown(w io.Writer, extra ...string) {
	group := Group(255)
	for _, s := range t.Grouped() {
		if s.Group != group {
			if group != 255 {
				fmt.Fprintln(w)
			}
			group = s.Group
			fmt.Fprintf(w, "**%s**\n\n| flag | default | live | cluster-wide | meaning |\n| --- | --- | --- | --- | --- |\n", group)
			if group == t.Grouped()[0].Group {
				for _, e := range extra {
					fmt.Fprintln(w, e)
				}
			}
		}
		flag := "--" + s.Name
		if p := s.placeholder(); p != "" {
			flag += " " + p
		}
		doc := s.Doc
		if doc == "" {
			doc = s.Help
		}
		if s.Kind == KindDuration {
			doc += " (" + s.RangeText() + ")"
		}
		fmt.Fprintf(w, "| `%s` | %s | %s | %s | %s |\n", flag, mdDefault(s.Default()), yesNo(s.Live), yesNo(s.Cluster), strings.ReplaceAll(doc, "|", `\|`))
	}
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func mdDefault(d string) string {
	if d == "" {
		return ""
	}
	return "`" + d + "`"
}

// Usage writes the settings for --help, by group, each with its default;
// more lists other flags (not settings) under "Other".
func (t Table) Usage(w io.Writer, more *pflag.FlagSet) {
	type row struct{ left, help string }
	var rows [][]row
	var titles []string
	group := Group(255)
	for _, s := range t.Grouped() {
		if s.Group != group {
			group = s.Group
			titles = append(titles, group.String())
			rows = append(rows, nil)
		}
		left := "--" + s.Name
		if p := s.placeholder(); p != "" {
			left += " " + p
		}
		d := s.Default()
		if d == "" {
			d = "none"
		}
		help := fmt.Sprintf("%s (default %s)", s.Help, d)
		if s.Kind == KindDuration {
			help = fmt.Sprintf("%s (%s) (default %s)", s.Help, s.RangeText(), d)
		}
		rows[len(rows)-1] = append(rows[len(rows)-1], row{left, help})
	}
	if more != nil && more.HasFlags() {
		titles = append(titles, "Other")
		rows = append(rows, nil)
		more.VisitAll(func(f *pflag.Flag) {
			left := "--" + f.Name
			if f.Value.Type() != "bool" {
				left += " " + strings.ToUpper(f.Value.Type())
			}
			help := f.Usage
			if f.DefValue != "" && f.DefValue != "false" {
				help += fmt.Sprintf(" (default %s)", f.DefValue)
			}
			rows[len(rows)-1] = append(rows[len(rows)-1], row{left, help})
		})
	}
	width := 0
	for _, g := range rows {
		for _, r := range g {
			width = max(width, min(len(r.left), 30))
		}
	}
	for i, g := range rows {
		fmt.Fprintf(w, "\n%s:\n", titles[i])
		for _, r := range g {
			if len(r.left) > width {
				fmt.Fprintf(w, "  %s\n  %*s  %s\n", r.left, width, "", r.help)
				continue
			}
			fmt.Fprintf(w, "  %-*s  %s\n", width, r.left, r.help)
		}
	}
}
