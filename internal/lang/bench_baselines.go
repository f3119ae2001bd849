//go:build !petrelbench

package lang

// baselines are the detectors RunBench measures beside whatlanggo: none in
// a plain build (lingua-go is linked only with -tags petrelbench).
func baselines() []benchDetector { return nil }
