package crawllog

import "strings"

// LanguagesAnnotation is the name of the annotation that carries a
// page's languages: "lang:eng;fra".
const LanguagesAnnotation = "lang"

// Languages returns the annotation of a page's languages, given as a
// CDXJ line's languages field has them (ISO 639-3 codes, largest share
// first, comma-separated): "lang:" and the codes separated by ";" (a
// comma separates annotations); "" for none.
func Languages(codes string) string {
	if codes == "" {
		return ""
	}
	return LanguagesAnnotation + ":" + strings.ReplaceAll(codes, ",", ";")
}

// Languages returns the page's languages the line's lang annotation
// carries, comma-separated as in the CDXJ field; "" when it has none.
func (l *Line) Languages() string {
	v, _ := l.Annotation(LanguagesAnnotation)
	return strings.ReplaceAll(v, ";", ",")
}
