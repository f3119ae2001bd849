package lang

import (
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"unicode"

	"golang.org/x/text/language"
)

// corpus is the labelled text read from a directory of translations:
// language code → distinct cleaned messages, in two halves that share no
// family of translation domains (.mo file names, family) and no message,
// in any language.
type corpus struct {
	train, test map[string]map[string]bool
}

// heldOut reports whether the translation domain (a .mo file's name
// without .mo, such as gtk30 or iso_3166) is held out of training for the
// benchmark: a quarter of the domain families (family), chosen by the
// FNV-1a hash of the family's name, so the split is the same on every
// machine with the same files and related domains fall on one side.
func heldOut(domain string) bool {
	h := fnv.New32a()
	h.Write([]byte(family(domain)))
	return h.Sum32()%4 == 0
}

// families names the family of domains that share much of their text
// (a project's several catalogues) under another name than their own.
var families = map[string]string{
	"bfd": "binutils", "gas": "binutils", "gold": "binutils", "gprof": "binutils",
	"ld": "binutils", "opcodes": "binutils",
	"libapt-pkg": "apt", "python-apt": "apt", "dpkg-dev": "dpkg",
	"gettext-runtime": "gettext", "gettext-tools": "gettext",
	"initdb": "postgresql", "libpq": "postgresql", "pgscripts": "postgresql",
	"plpgsql": "postgresql", "postgres": "postgresql", "psql": "postgresql",
}

// family returns the family of a translation domain: its name without a
// -gnulib or -properties part and without a version or part number
// (gtk30-properties and gtk20 are gtk; iso_3166-2 and iso_639_3 are iso),
// then mapped by families (pg_* is postgresql).
func family(domain string) string {
	d := strings.TrimSuffix(strings.TrimSuffix(domain, "-gnulib"), "-properties")
	d = strings.TrimRight(d, "0123456789.-_")
	if f, ok := families[d]; ok {
		return f
	}
	if strings.HasPrefix(d, "pg_") {
		return "postgresql"
	}
	return d
}

// readCorpus reads the .mo files under locale (<locale>/LC_MESSAGES/*.mo):
// each locale's translated messages (English: the original messages of
// every locale), cleaned of format directives and markup, into train or
// test by the domain of their file. A message of test whose letters
// (lettersKey) train has, in any language, is dropped from test.
func readCorpus(locale string) (corpus, error) {
	dirs, err := os.ReadDir(locale)
	if err != nil {
		return corpus{}, fmt.Errorf("lang: %w", err)
	}
	c := corpus{train: map[string]map[string]bool{}, test: map[string]map[string]bool{}}
	add := func(half map[string]map[string]bool, code, s string) {
		if s = cleanMessage(s); len(s) >= 20 && letters(s) >= 12 {
			if half[code] == nil {
				half[code] = map[string]bool{}
			}
			half[code][s] = true
		}
	}
	for _, d := range dirs {
		code := localeCode(d.Name())
		if code == "" || code == "eng" {
			continue
		}
		files, _ := filepath.Glob(filepath.Join(locale, d.Name(), "LC_MESSAGES", "*.mo"))
		for _, f := range files {
			half := c.train
			if heldOut(strings.TrimSuffix(filepath.Base(f), ".mo")) {
				half = c.test
			}
			b, err := os.ReadFile(f)
			if err != nil {
				return corpus{}, fmt.Errorf("lang: %w", err)
			}
			msgs, err := readMO(b)
			if err != nil {
				continue // a file of another format under the name
			}
			for _, m := range msgs {
				if m.Str != m.ID {
					add(half, code, m.Str)
				}
				add(half, "eng", m.ID)
			}
		}
	}
	seen := map[string]bool{} // every message trained on, in any language, by its letters
	for _, set := range c.train {
		for s := range set {
			seen[lettersKey(s)] = true
		}
	}
	for _, set := range c.test {
		for s := range set {
			if seen[lettersKey(s)] {
				delete(set, s)
			}
		}
	}
	if len(c.train) == 0 && len(c.test) == 0 {
		return corpus{}, fmt.Errorf("lang: no translations found under %s", locale)
	}
	return c, nil
}

// lettersKey returns the letters of s, lower-cased: messages that differ
// only in case, punctuation, digits or spacing have the same key.
func lettersKey(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsLetter(r) {
			return unicode.ToLower(r)
		}
		return -1
	}, s)
}

var (
	formatRE = regexp.MustCompile(`%(\([a-zA-Z_]+\))?[-+ #0-9.*lhqjzt]*[a-zA-Z%]|\$\{?[A-Za-z_]+\}?|\{[^{}]*\}|<[^<>]*>|\\[nt]`)
	spaceRE  = regexp.MustCompile(`\s+`)
)

// cleanMessage removes what is not language from a message: format
// directives, placeholders, markup, accelerator marks.
func cleanMessage(s string) string {
	s = formatRE.ReplaceAllString(s, " ")
	s = strings.NewReplacer("_", "", "&", "").Replace(s)
	return strings.TrimSpace(spaceRE.ReplaceAllString(s, " "))
}

// localeCode returns the ISO 639-3 code (macrolanguage) of a locale name
// such as pt_BR or sr@latin, or "" for none.
func localeCode(name string) string {
	name, _, _ = strings.Cut(name, "@")
	name, _, _ = strings.Cut(name, "_")
	name, _, _ = strings.Cut(name, ".")
	b, err := language.ParseBase(name)
	if err != nil {
		return ""
	}
	return Macro(b.ISO3())
}
