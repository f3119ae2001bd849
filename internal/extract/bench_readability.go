//go:build petrelbench

package extract

import (
	"bytes"
	"net/url"

	readability "codeberg.org/readeck/go-readability/v2"
)

// baselines are the extractors RunBench measures beside MainText:
// go-readability (readeck's fork), its TextContent as the benchmark's own
// driver takes it.
func baselines() []benchExtractor {
	return []benchExtractor{{"readability", readabilityText}}
}

// readabilityText extracts a page's article text with go-readability.
func readabilityText(page []byte, pageURL string) (string, error) {
	u, err := url.Parse(pageURL)
	if err != nil || pageURL == "" {
		u, _ = url.Parse("https://example.com/")
	}
	a, err := readability.FromReader(bytes.NewReader(page), u)
	if err != nil {
		return "", err
	}
	var b bytes.Buffer
	if err := a.RenderText(&b); err != nil {
		return "", err
	}
	return b.String(), nil
}
