package settings

import (
	"encoding"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// MaxDuration bounds every duration setting that declares no upper bound
// of its own (Range): a week. No duration of a crawl's settings is longer,
// so the scheduler's times, which add delays to the clock, cannot wrap.
const MaxDuration = 7 * 24 * time.Hour

// Duration declares a duration setting bound to p, bounded above by
// MaxDuration unless Range gives a narrower range.
func Duration(p *time.Duration, name string, def time.Duration, help string) *Setting {
	s := newSetting(name, KindDuration, help, &durationValue{p: p, def: def})
	hi := float64(MaxDuration)
	s.hi = &hi
	return s
}

// Count declares a whole-number setting bound to p.
func Count[T ~int | ~int64](p *T, name string, def T, help string) *Setting {
	return newSetting(name, KindCount, help, &intValue[T]{p: p, def: def})
}

// Size declares a byte-size setting bound to p: it reads 1024, 64KiB,
// 8MiB, 1GiB (powers of two) and 500kB, 2MB, 1GB (powers of ten), and shows
// values in the largest binary unit that divides them.
func Size[T ~int | ~int64](p *T, name string, def T, help string) *Setting {
	return newSetting(name, KindSize, help, &intValue[T]{p: p, def: def, size: true})
}

// Float declares a decimal setting bound to p.
func Float(p *float64, name string, def float64, help string) *Setting {
	return newSetting(name, KindFloat, help, &floatValue{p: p, def: def})
}

// Bool declares an on/off setting bound to p.
func Bool(p *bool, name string, def bool, help string) *Setting {
	return newSetting(name, KindBool, help, &boolValue{p: p, def: def})
}

// String declares a free-text setting bound to p.
func String[T ~string](p *T, name string, def T, help string) *Setting {
	return newSetting(name, KindString, help, &stringValue[T]{p: p, def: def})
}

// Enum declares a setting bound to p that takes one of choices.
func Enum[T ~string](p *T, name string, def T, choices []string, help string) *Setting {
	s := newSetting(name, KindEnum, help, &stringValue[T]{p: p, def: def})
	s.Choices = choices
	return s
}

// List declares a list-of-strings setting bound to p; on the command line
// the items are separated by commas (or the flag is repeated).
func List(p *[]string, name string, def []string, help string) *Setting {
	return newSetting(name, KindList, help, &listValue{p: p, def: def})
}

// TextVar is a variable that reads and writes its own text form.
type TextVar interface {
	encoding.TextMarshaler
	encoding.TextUnmarshaler
}

// Text declares an enum setting whose variable parses itself (a policy
// like "bucket:16"); choices are the forms offered by shell completion and
// listed in --help.
func Text(p TextVar, name, def string, choices []string, help string) *Setting {
	s := newSetting(name, KindEnum, help, &textValue{p: p, def: def})
	s.Choices = choices
	s.check = func() error { return nil } // the variable's parser is the check
	return s
}

func newSetting(name string, k Kind, help string, v value) *Setting {
	s := &Setting{Name: name, Kind: k, Help: help, v: v}
	return s
}

func toFloat(x any) float64 {
	switch v := x.(type) {
	case time.Duration:
		return float64(v)
	case int:
		return float64(v)
	case int64:
		return float64(v)
	case float64:
		return v
	}
	panic(fmt.Sprintf("settings: range bound of type %T", x))
}

type durationValue struct {
	p   *time.Duration
	def time.Duration
}

func (v *durationValue) set(s string) error {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return fmt.Errorf("want a duration like 500ms, 2s or 1h30m, not %q", s)
	}
	*v.p = d
	return nil
}

func (v *durationValue) setAny(x any) error {
	if s, ok := x.(string); ok {
		return v.set(s)
	}
	if n, ok := x.(int64); ok && n == 0 {
		*v.p = 0
		return nil
	}
	if n, ok := x.(int); ok && n == 0 {
		*v.p = 0
		return nil
	}
	return fmt.Errorf("want a duration in quotes like \"2s\", not %v", x)
}

func (v *durationValue) text() string            { return fmtDuration(*v.p) }
func (v *durationValue) json() any               { return v.text() }
func (v *durationValue) toml() string            { return strconv.Quote(v.text()) }
func (v *durationValue) reset()                  { *v.p = v.def }
func (v *durationValue) defaultText() string     { return fmtDuration(v.def) }
func (v *durationValue) num() (float64, bool)    { return float64(*v.p), true }
func (v *durationValue) format(f float64) string { return fmtDuration(time.Duration(f)) }
func (v *durationValue) equal(o value) bool      { return *v.p == *o.(*durationValue).p }
func (v *durationValue) clone() value {
	c := *v.p
	return &durationValue{p: &c, def: v.def}
}

// fmtDuration writes whole minutes and hours without the zero tails
// time.Duration.String adds ("10m", not "10m0s").
func fmtDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

type intValue[T ~int | ~int64] struct {
	p    *T
	def  T
	size bool
}

func (v *intValue[T]) set(s string) error {
	var n int64
	var err error
	if v.size {
		n, err = ParseSize(s)
	} else {
		n, err = strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil {
			err = fmt.Errorf("want a whole number, not %q", s)
		}
	}
	if err != nil {
		return err
	}
	if int64(T(n)) != n {
		return fmt.Errorf("%d is too large", n)
	}
	*v.p = T(n)
	return nil
}

func (v *intValue[T]) setAny(x any) error {
	switch n := x.(type) {
	case int:
		*v.p = T(n)
		return nil
	case int32:
		*v.p = T(n)
		return nil
	case int64:
		*v.p = T(n)
		return nil
	case float64:
		if n == math.Trunc(n) && math.Abs(n) < 1<<53 {
			*v.p = T(n)
			return nil
		}
	case string:
		if v.size {
			return v.set(n)
		}
	}
	if v.size {
		return fmt.Errorf("want a size like 1024 or \"64KiB\", not %v", x)
	}
	return fmt.Errorf("want a whole number, not %v", x)
}

func (v *intValue[T]) text() string {
	if v.size {
		return FormatSize(int64(*v.p))
	}
	return strconv.FormatInt(int64(*v.p), 10)
}

func (v *intValue[T]) json() any {
	if v.size {
		return v.text()
	}
	return int64(*v.p)
}

func (v *intValue[T]) toml() string {
	if v.size {
		return strconv.Quote(v.text())
	}
	return v.text()
}

func (v *intValue[T]) reset() { *v.p = v.def }
func (v *intValue[T]) defaultText() string {
	if v.size {
		return FormatSize(int64(v.def))
	}
	return strconv.FormatInt(int64(v.def), 10)
}
func (v *intValue[T]) num() (float64, bool) { return float64(*v.p), true }
func (v *intValue[T]) format(f float64) string {
	if v.size {
		return FormatSize(int64(f))
	}
	return strconv.FormatInt(int64(f), 10)
}
func (v *intValue[T]) equal(o value) bool { return *v.p == *o.(*intValue[T]).p }
func (v *intValue[T]) clone() value {
	c := *v.p
	return &intValue[T]{p: &c, def: v.def, size: v.size}
}

type floatValue struct {
	p   *float64
	def float64
}

func (v *floatValue) set(s string) error {
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return fmt.Errorf("want a number, not %q", s)
	}
	*v.p = f
	return nil
}

func (v *floatValue) setAny(x any) error {
	switch f := x.(type) {
	case float64:
		*v.p = f
		return nil
	case int64:
		*v.p = float64(f)
		return nil
	case int:
		*v.p = float64(f)
		return nil
	}
	return fmt.Errorf("want a number, not %v", x)
}

func (v *floatValue) text() string { return strconv.FormatFloat(*v.p, 'g', -1, 64) }
func (v *floatValue) json() any    { return *v.p }
func (v *floatValue) toml() string {
	s := v.text()
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	return s
}
func (v *floatValue) reset()                  { *v.p = v.def }
func (v *floatValue) defaultText() string     { return strconv.FormatFloat(v.def, 'g', -1, 64) }
func (v *floatValue) num() (float64, bool)    { return *v.p, true }
func (v *floatValue) format(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
func (v *floatValue) equal(o value) bool      { return *v.p == *o.(*floatValue).p }
func (v *floatValue) clone() value {
	c := *v.p
	return &floatValue{p: &c, def: v.def}
}

type boolValue struct {
	p   *bool
	def bool
}

func (v *boolValue) set(s string) error {
	b, err := strconv.ParseBool(strings.TrimSpace(s))
	if err != nil {
		return fmt.Errorf("want true or false, not %q", s)
	}
	*v.p = b
	return nil
}

func (v *boolValue) setAny(x any) error {
	if b, ok := x.(bool); ok {
		*v.p = b
		return nil
	}
	return fmt.Errorf("want true or false, not %v", x)
}

func (v *boolValue) text() string          { return strconv.FormatBool(*v.p) }
func (v *boolValue) json() any             { return *v.p }
func (v *boolValue) toml() string          { return v.text() }
func (v *boolValue) reset()                { *v.p = v.def }
func (v *boolValue) defaultText() string   { return strconv.FormatBool(v.def) }
func (v *boolValue) num() (float64, bool)  { return 0, false }
func (v *boolValue) format(float64) string { return "" }
func (v *boolValue) equal(o value) bool    { return *v.p == *o.(*boolValue).p }
func (v *boolValue) clone() value {
	c := *v.p
	return &boolValue{p: &c, def: v.def}
}

type stringValue[T ~string] struct {
	p   *T
	def T
}

func (v *stringValue[T]) set(s string) error { *v.p = T(s); return nil }

func (v *stringValue[T]) setAny(x any) error {
	if s, ok := x.(string); ok {
		*v.p = T(s)
		return nil
	}
	return fmt.Errorf("want a string in quotes, not %v", x)
}

func (v *stringValue[T]) text() string          { return string(*v.p) }
func (v *stringValue[T]) json() any             { return string(*v.p) }
func (v *stringValue[T]) toml() string          { return strconv.Quote(string(*v.p)) }
func (v *stringValue[T]) reset()                { *v.p = v.def }
func (v *stringValue[T]) defaultText() string   { return string(v.def) }
func (v *stringValue[T]) num() (float64, bool)  { return 0, false }
func (v *stringValue[T]) format(float64) string { return "" }
func (v *stringValue[T]) equal(o value) bool    { return *v.p == *o.(*stringValue[T]).p }
func (v *stringValue[T]) clone() value {
	c := *v.p
	return &stringValue[T]{p: &c, def: v.def}
}

type listValue struct {
	p   *[]string
	def []string
}

func (v *listValue) set(s string) error {
	s = strings.TrimSpace(s)
	s = strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	*v.p = out
	return nil
}

func (v *listValue) setAny(x any) error {
	items, ok := x.([]any)
	if !ok {
		return fmt.Errorf("want a list of strings like [\"a\", \"b\"], not %v", x)
	}
	out := make([]string, 0, len(items))
	for _, it := range items {
		s, ok := it.(string)
		if !ok {
			return fmt.Errorf("want a list of strings, not an item %v", it)
		}
		out = append(out, s)
	}
	*v.p = out
	return nil
}

func (v *listValue) text() string { return strings.Join(*v.p, ",") }
func (v *listValue) json() any {
	if *v.p == nil {
		return []string{}
	}
	return slices.Clone(*v.p)
}
func (v *listValue) toml() string {
	q := make([]string, len(*v.p))
	for i, s := range *v.p {
		q[i] = strconv.Quote(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}
func (v *listValue) reset()                { *v.p = slices.Clone(v.def) }
func (v *listValue) defaultText() string   { return strings.Join(v.def, ",") }
func (v *listValue) num() (float64, bool)  { return 0, false }
func (v *listValue) format(float64) string { return "" }
func (v *listValue) equal(o value) bool    { return slices.Equal(*v.p, *o.(*listValue).p) }
func (v *listValue) clone() value {
	c := slices.Clone(*v.p)
	return &listValue{p: &c, def: v.def}
}

// textValue holds a variable that parses itself; copies for comparison
// keep its text form.
type textValue struct {
	p   TextVar
	def string
	own *string // set in clones: the text, not a variable
}

func (v *textValue) set(s string) error {
	if v.own != nil {
		*v.own = s
		return nil
	}
	return v.p.UnmarshalText([]byte(strings.TrimSpace(s)))
}

func (v *textValue) setAny(x any) error {
	if s, ok := x.(string); ok {
		return v.set(s)
	}
	return fmt.Errorf("want a string in quotes, not %v", x)
}

func (v *textValue) text() string {
	if v.own != nil {
		return *v.own
	}
	b, _ := v.p.MarshalText()
	return string(b)
}
func (v *textValue) json() any    { return v.text() }
func (v *textValue) toml() string { return strconv.Quote(v.text()) }
func (v *textValue) reset() {
	if v.own != nil {
		*v.own = v.def
		return
	}
	if err := v.p.UnmarshalText([]byte(v.def)); err != nil {
		panic(fmt.Sprintf("settings: default %q does not parse: %v", v.def, err))
	}
}
func (v *textValue) defaultText() string   { return v.def }
func (v *textValue) num() (float64, bool)  { return 0, false }
func (v *textValue) format(float64) string { return "" }
func (v *textValue) equal(o value) bool    { return v.text() == o.text() }
func (v *textValue) clone() value {
	t := v.text()
	return &textValue{p: v.p, def: v.def, own: &t}
}

var sizeUnits = []struct {
	suffix string
	mult   int64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"kB", 1e3}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
	{"B", 1},
}

// ParseSize reads a byte size: a whole number of bytes, or a number
// (possibly with a fraction) followed by KiB, MiB, GiB, TiB (powers of
// two) or kB, MB, GB, TB (powers of ten), with or without a space.
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range sizeUnits {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	bad := fmt.Errorf("want a size like 1024, 64KiB, 8MiB, 1GiB or 500kB, not %q", s)
	if n, err := strconv.ParseInt(t, 10, 64); err == nil {
		if n != 0 && (n*mult/mult != n) {
			return 0, bad
		}
		return n * mult, nil
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f*float64(mult)) > math.MaxInt64/2 {
		return 0, bad
	}
	return int64(math.Round(f * float64(mult))), nil
}

// FormatSize writes n in the largest binary unit that divides it exactly
// (8MiB, 64KiB), or as a plain number of bytes.
func FormatSize(n int64) string {
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n != 0 && n%u.mult == 0 {
			return strconv.FormatInt(n/u.mult, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10)
}
