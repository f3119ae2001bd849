package lang

import (
	"reflect"
	"testing"
)

// TestFamily: related translation domains fall in one family, so the
// benchmark's split (heldOut) puts them on one side.
func TestFamily(t *testing.T) {
	for _, group := range [][]string{
		{"gtk30", "gtk20", "gtk30-properties", "gtk20-properties"},
		{"iso_3166", "iso_3166-1", "iso_3166_2", "iso_3166-2", "iso_639-3", "iso_639_3", "iso_15924"},
		{"pg_ctl-15", "psql-15", "libpq5-15", "postgres-15", "initdb-15"},
		{"binutils", "gas", "ld", "gold", "bfd", "opcodes", "gprof"},
		{"wget", "wget-gnulib"}, {"man-db", "man-db-gnulib"}, {"apt", "libapt-pkg6.0", "python-apt"},
		{"gettext-runtime", "gettext-tools"}, {"glib20"}, {"coreutils"},
	} {
		for _, d := range group {
			if family(d) != family(group[0]) || heldOut(d) != heldOut(group[0]) {
				t.Errorf("family(%q) = %q, family(%q) = %q: want one", d, family(d), group[0], family(group[0]))
			}
		}
	}
	if family("glib20") == family("gtk30") {
		t.Error("glib and gtk in one family")
	}
}

// TestLettersKey: messages that differ in case, punctuation, digits or
// spaces have one key.
func TestLettersKey(t *testing.T) {
	if a, b := lettersKey("Open File…"), lettersKey("open file:  2"); a != b || a != "openfile" {
		t.Errorf("keys %q, %q", a, b)
	}
}

// TestRoffText: requests are dropped, escapes removed, lines joined into
// paragraphs.
func TestRoffText(t *testing.T) {
	src := ".\\\" a comment\n.TH LS 1\n.SH NAME\nls \\- Verzeichnisinhalte\nauflisten\n.PP\n\\fBls\\fR zeigt\\(emin \\fIder\\fP Regel\\&.\n\n'br\nEnde\n"
	want := []string{"ls - Verzeichnisinhalte auflisten", "ls zeigt in der Regel.", "Ende"}
	if got := roffText(src); !reflect.DeepEqual(got, want) {
		t.Errorf("roffText = %q, want %q", got, want)
	}
}

// TestSeenIn: a paragraph is seen in training if it, or one of its
// sentences of 12 letters or more, is a trained message.
func TestSeenIn(t *testing.T) {
	trained := map[string]bool{lettersKey("Keine solche Datei oder Verzeichnis"): true, lettersKey("Fehler"): true}
	for para, want := range map[string]bool{
		"Keine solche Datei oder Verzeichnis.":                       true,
		"Das Programm endet. Keine solche Datei oder Verzeichnis: x": true,
		"Fehler. Das Programm endet mit einem Rückgabewert.":         false, // "Fehler" is too short to count
		"Eine ganz andere Zeile über etwas anderes.":                 false,
	} {
		if got := seenIn(para, trained); got != want {
			t.Errorf("seenIn(%q) = %v, want %v", para, got, want)
		}
	}
}
