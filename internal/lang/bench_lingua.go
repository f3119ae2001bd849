//go:build petrelbench

package lang

import (
	"strings"

	"github.com/pemistahl/lingua-go"
)

// baselines are the detectors RunBench measures beside whatlanggo:
// lingua-go with all its languages, in low-accuracy mode and in its
// default (high-accuracy) mode, models preloaded.
func baselines() []benchDetector {
	return []benchDetector{
		{name: "lingua-low", known: linguaKnows(), build: func() func(string) string { return linguaBench(true) }},
		{name: "lingua-high", known: linguaKnows(), build: func() func(string) string { return linguaBench(false) }},
	}
}

// linguaKnows returns the languages lingua-go knows.
func linguaKnows() map[string]bool {
	knows := map[string]bool{}
	for _, l := range lingua.AllLanguages() {
		knows[Macro(strings.ToLower(l.IsoCode639_3().String()))] = true
	}
	return knows
}

// linguaBench builds a lingua-go detector of all its languages.
func linguaBench(low bool) func(string) string {
	b := lingua.NewLanguageDetectorBuilder().FromAllLanguages().WithPreloadedLanguageModels()
	if low {
		b = b.WithLowAccuracyMode()
	}
	d := b.Build()
	return func(chunk string) string {
		l, ok := d.DetectLanguageOf(chunk)
		if !ok {
			return ""
		}
		return Macro(strings.ToLower(l.IsoCode639_3().String()))
	}
}
