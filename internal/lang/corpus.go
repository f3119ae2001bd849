package lang

import (
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"golang.org/x/text/language"
)

// corpus is the labelled text read from a directory of translations:
// language code → distinct cleaned messages, in two halves that share no
// translation domain (.mo file name) and no message.
type corpus struct {
	train, test map[string]map[string]bool
}

// heldOut reports whether the translation domain (a .mo file's name
// without .mo, such as gtk30 or iso_3166) is held out of training for the
// benchmark: a quarter of the domains, chosen by the FNV-1a hash of the
// name, so the split is the same on every machine with the same files.
func heldOut(domain string) bool {
	h := fnv.New32a()
	h.Write([]byte(domain))
	return h.Sum32()%4 == 0
}

// readCorpus reads the .mo files under locale (<locale>/LC_MESSAGES/*.mo):
// each locale's translated messages (English: the original messages of
// every locale), cleaned of format directives and markup, into train or
// test by the domain of their file. A message in both halves of one
// language is kept in train only.
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
	for code, set := range c.test {
		for s := range set {
			if c.train[code][s] {
				delete(set, s)
			}
		}
	}
	if len(c.train) == 0 && len(c.test) == 0 {
		return corpus{}, fmt.Errorf("lang: no translations found under %s", locale)
	}
	return c, nil
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
