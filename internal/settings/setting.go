package settings

import (
	"errors"
	"fmt"
	"strings"
)

// Kind is the type of a setting's value.
type Kind uint8

// The kinds of settings.
const (
	KindDuration Kind = iota // a Go duration: "2s", "150ms", "1h30m"
	KindCount                // a whole number
	KindSize                 // bytes: 1024, 64KiB, 8MiB, 1GiB, 500kB, 2MB
	KindFloat                // a decimal number
	KindBool                 // true or false
	KindString               // free text (a path, an address, a header value)
	KindEnum                 // one of Choices, or a form Check accepts
	KindList                 // a list of strings
)

var kindNames = [...]string{"duration", "count", "size", "float", "bool", "string", "enum", "list"}

func (k Kind) String() string { return kindNames[k] }

// Group is the --help section a setting is listed under.
type Group uint8

// The groups of --help, in the order they are listed.
const (
	Seeds Group = iota // seeds and scope
	Politeness
	Limits
	Fetching
	Storage
	Operations
	Cluster
	numGroups
)

var groupNames = [...]string{"Seeds and scope", "Politeness", "Limits", "Fetching", "Storage", "Operations", "Cluster"}

func (g Group) String() string { return groupNames[g] }

// A Setting is one declared setting of a crawl, bound to the variable that
// holds its value (a field of its package's settings struct). Build one
// with a constructor (Duration, Count, Size, Float, Bool, String, Enum,
// List, Text) and refine it with the chained methods; the package it
// belongs to lists it in its Table.
//
// A Setting is not safe for concurrent use: it reads and writes its bound
// variable without synchronisation, like the struct it is bound to.
type Setting struct {
	Name    string
	Kind    Kind
	Help    string   // one line for --help
	Doc     string   // longer text for the README's table (default: Help)
	Unit    string   // placeholder of the value in --help and the README (DUR, N, BYTES...)
	Group   Group    // --help section
	Choices []string // values of an enum (also offered by shell completion)
	// Live says the setting can change while the crawl runs
	// (Agent.Reconfigure); Fixed is why it cannot, when it cannot.
	Live  bool
	Fixed string
	// Cluster says every agent of a cluster must hold the same value.
	Cluster bool
	// DefaultText replaces the formatted default where it depends on the
	// machine (e.g. "4 × CPUs").
	DefaultText string
	// Machine says the default depends on the machine (petrel config
	// defaults writes it commented out).
	Machine bool

	v     value
	lo    *float64
	hi    *float64
	check func() error
}

// value is a setting's bound variable and its default.
type value interface {
	set(s string) error // from the command line or a TOML/JSON string
	setAny(x any) error // from a decoded TOML/JSON value
	text() string       // the form set accepts
	json() any          // the JSON/TOML value (strings for durations and sizes)
	toml() string       // a TOML literal of the value
	reset()             // to the default
	defaultText() string
	num() (float64, bool) // the value as a number, for ranges
	format(float64) string
	equal(value) bool
	clone() value // a copy bound to a private variable (for comparisons)
}

// In sets the --help group.
func (s *Setting) In(g Group) *Setting { s.Group = g; return s }

// SetLive marks the setting as changeable while the crawl runs.
func (s *Setting) SetLive() *Setting { s.Live = true; s.Fixed = ""; return s }

// SetFixed marks the setting as fixed for the run, saying why.
func (s *Setting) SetFixed(why string) *Setting { s.Live = false; s.Fixed = why; return s }

// ClusterWide marks the setting as one every agent of a cluster must share.
func (s *Setting) ClusterWide() *Setting { s.Cluster = true; return s }

// WithUnit sets the value's placeholder in --help and the README.
func (s *Setting) WithUnit(u string) *Setting { s.Unit = u; return s }

// WithDoc sets the README's longer description.
func (s *Setting) WithDoc(doc string) *Setting { s.Doc = doc; return s }

// ShowDefault sets the text --help and the README show for the default.
func (s *Setting) ShowDefault(text string) *Setting { s.DefaultText = text; return s }

// MachineDefault says the default depends on the machine, and how.
func (s *Setting) MachineDefault(text string) *Setting {
	s.DefaultText, s.Machine = text, true
	return s
}

// Range bounds a duration, count, size or float setting to [lo, hi]
// (given in the setting's Go type: time.Duration, int, int64, float64).
func (s *Setting) Range(lo, hi any) *Setting {
	l, h := toFloat(lo), toFloat(hi)
	s.lo, s.hi = &l, &h
	return s
}

// AtLeast bounds a number below (a duration keeps its upper bound,
// MaxDuration unless Range set another).
func (s *Setting) AtLeast(lo any) *Setting {
	l := toFloat(lo)
	s.lo = &l
	return s
}

// Check adds a validation of the bound value; its error is reported after
// the setting's name.
func (s *Setting) Check(f func() error) *Setting { s.check = f; return s }

// Set sets the value from text, as given on the command line.
func (s *Setting) Set(text string) error {
	if err := s.v.set(text); err != nil {
		return fmt.Errorf("--%s: %v", s.Name, err)
	}
	return nil
}

// SetValue sets the value from a decoded TOML or JSON value.
func (s *Setting) SetValue(x any) error {
	if err := s.v.setAny(x); err != nil {
		return fmt.Errorf("%s: %v", s.Name, err)
	}
	return nil
}

// String returns the value in the form Set accepts.
func (s *Setting) String() string { return s.v.text() }

// Value returns the value as the JSON form and the TOML file hold it.
func (s *Setting) Value() any { return s.v.json() }

// Reset sets the default.
func (s *Setting) Reset() { s.v.reset() }

// Default returns the default's text (DefaultText when set).
func (s *Setting) Default() string {
	if s.DefaultText != "" {
		return s.DefaultText
	}
	return s.v.defaultText()
}

// IsDefault reports whether the value is the default.
func (s *Setting) IsDefault() bool {
	d := s.v.clone()
	d.reset()
	return s.v.equal(d)
}

// Validate checks the value against the setting's range and check; the
// error is one line naming the setting.
func (s *Setting) Validate() error {
	if n, ok := s.v.num(); ok {
		switch {
		case s.lo != nil && s.hi != nil && (n < *s.lo || n > *s.hi):
			return fmt.Errorf("--%s must be between %s and %s, not %s", s.Name, s.v.format(*s.lo), s.v.format(*s.hi), s.v.text())
		case s.lo != nil && n < *s.lo:
			return fmt.Errorf("--%s must be at least %s, not %s", s.Name, s.v.format(*s.lo), s.v.text())
		case s.hi != nil && n > *s.hi:
			return fmt.Errorf("--%s must be at most %s, not %s", s.Name, s.v.format(*s.hi), s.v.text())
		}
	}
	if s.Kind == KindEnum && s.check == nil && !contains(s.Choices, s.v.text()) {
		return fmt.Errorf("--%s must be one of %s, not %q", s.Name, strings.Join(s.Choices, ", "), s.v.text())
	}
	if s.check != nil {
		if err := s.check(); err != nil {
			return fmt.Errorf("--%s: %v", s.Name, err)
		}
	}
	return nil
}

// placeholder is the value's name in --help and the README.
func (s *Setting) placeholder() string {
	if s.Unit != "" {
		return s.Unit
	}
	switch s.Kind {
	case KindDuration:
		return "DUR"
	case KindCount:
		return "N"
	case KindSize:
		return "BYTES"
	case KindFloat:
		return "F"
	case KindBool:
		return ""
	case KindEnum:
		return strings.Join(s.Choices, "|")
	case KindList:
		return "LIST"
	}
	return "S"
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

var errNotNumber = errors.New("not a number")
