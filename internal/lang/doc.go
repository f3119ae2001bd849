// Package lang identifies the languages of a page's text: up to three, each
// with its share of the text, as ISO 639-3 codes (as Common Crawl writes
// them in content_languages: macrolanguages such as zho, msa or fas rather
// than the individual languages a detector names, cmn, zsm, pes).
//
// Method. Detect cuts the text into chunks of whole lines of at least
// chunkMin bytes, keeps at most maxCalls of them evenly spaced (the first
// and the last among them), identifies the language of each (of its first
// maxAsk bytes) with
// whatlanggo (a trigram model of 84 languages, with the script deciding
// alone where one language has it), and gives each language the share of
// the kept chunks' letters in its chunks. Chunks too short or too unsure to call are left
// out of every share, so shares sum to at most 1. Languages below
// MinShare are dropped; the rest are sorted by share, at most three.
//
// The library was chosen by measuring (bench.go, `petrel bench lang`):
// accuracy on samples of the translations Debian ships as .mo files
// (/usr/share/locale), CPU per text and memory, against lingua-go beside
// it in a build with -tags petrelbench. The figures are in BENCHMARKS.md
// and docs/datasets-text.md.
//
// Files:
//   - lang.go: Share, Detect and the code mapping.
//   - mo.go: reading GNU gettext .mo files (for the benchmark).
//   - bench.go: RunBench, the benchmark on Debian's translations.
//   - bench_lingua.go (build tag petrelbench): lingua-go beside it.
package lang
