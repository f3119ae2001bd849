package lang

import "github.com/abadojack/whatlanggo"

// minConfidence is whatlanggo's confidence below which a chunk is not
// called.
const minConfidence = 0.1

// whatlang identifies the language of one chunk with whatlanggo; "" when
// unsure.
func whatlang(chunk string) string {
	info := whatlanggo.Detect(chunk)
	if info.Confidence < minConfidence {
		return ""
	}
	return Macro(info.Lang.Iso6393())
}

// whatlangCode returns the code Detect reports for whatlanggo's language
// number l, "" for none.
func whatlangCode(l int) string {
	c := whatlanggo.Lang(l).Iso6393()
	if c == "" {
		return ""
	}
	return Macro(c)
}
