//go:build !petrelbench

package extract

// baselines are the extractors RunBench measures beside MainText: none in
// a plain build (go-readability is linked only with -tags petrelbench).
func baselines() []benchExtractor { return nil }
