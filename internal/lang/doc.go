// Package lang identifies the languages of a page's text: up to three, each
// with its share of the text, as ISO 639-3 codes (as Common Crawl writes
// them in content_languages: macrolanguages such as zho, msa or fas rather
// than the individual languages a detector names, cmn, zsm, pes).
//
// Method. Detect cuts the text into chunks of whole lines of at least
// chunkMin bytes, keeps at most maxCalls of them evenly spaced (the first
// and the last among them), identifies the language of each (of its first
// maxAsk bytes) with Petrel's own model, and gives each language the share
// of the kept chunks' letters in its chunks. Chunks too short to call, or
// in a script no language of the model is written in, are left out of
// every share, so shares sum to at most 1. Languages below MinShare are
// dropped; the rest are sorted by share, at most three.
//
// The model. A chunk's main script (the script of most of its letters)
// picks the languages compared: where one language of the model is written
// in it, that one is the answer; else the language whose table of
// character 1-, 2- and 3-grams (letters lower-cased, word boundaries as a
// space; ngram.go) scores the chunk's grams highest, a gram scoring its
// quantized log-probability in the language, nothing if the language's
// table lacks it. The grams are scored in the chunk's order, and the
// scoring stops once one language leads every other by stopMargin
// (looked at every checkEvery grams): a chunk whose language is plain
// early is not read to its end (margin_test.go measures the margin's
// accuracy and saving).
//
// The tables are hashed into one array in model.bin (model.go), which is
// embedded. At the first Detect they are rearranged, once, into a table
// per script of several languages (table.go): one lookup of a gram's hash
// gives its scores in all the script's languages, a byte each, side by
// side (a short list instead for a gram few of them have), added eight
// languages at a time. The table's sums are exactly those of the file's
// entries (table_test.go).
//
// Where model.bin comes from. gen/ trains it: from the module's root,
//
//	go generate ./internal/lang
//
// or go run ./internal/lang/gen (flags: -locale, -min-bytes, -grams). The
// text is the translations Debian ships as GNU gettext .mo files under
// /usr/share/locale: each locale's translated messages (English: the
// original messages), cleaned of format directives, markup and
// accelerator marks (corpus.go), of the families of translation domains
// the benchmark does not hold out (heldOut holds out a quarter of them, by
// a hash of the family's name). A language needs 5,000 bytes of text to
// be in the model; each keeps its 3,000 most frequent grams. On the
// Debian 12 image this was made on (4,250 .mo files) that is 106
// languages and a file of 1,463,374 bytes; other files under
// /usr/share/locale give another model. The golden test (golden_test.go)
// pins Detect's answers for texts in 15 languages and 10 scripts.
//
// The benchmark (bench.go, `petrel bench lang`) measures the model beside
// whatlanggo (and lingua-go in a build with -tags petrelbench) on the
// held-out families of .mo domains, none of whose messages the model was
// trained on in any language, and on the translated man pages under
// /usr/share/man (man.go), text of another kind than the user-interface
// strings it was trained on. The figures are in BENCHMARKS.md and
// docs/datasets-text.md.
//
// Files:
//   - lang.go: Share, Detect, the chunking, the code mapping, and Codes
//     (languages as Common Crawl writes them, "eng,fra").
//   - model.go: the model file's format, its decoding, a chunk's language.
//   - table.go: a script's table, built from the file; a chunk's scoring.
//   - ngram.go: a text's character n-grams (hashed) and its scripts.
//   - model.bin: the model, embedded; written by gen/.
//   - train.go: WriteModel, the training.
//   - corpus.go: the translations as labelled text, split by domain family.
//   - mo.go: reading GNU gettext .mo files.
//   - gen/main.go: the command that writes model.bin.
//   - bench.go: RunBench, the benchmark on the two corpora.
//   - man.go: the man pages as labelled text (roff stripped).
//   - bench_whatlang.go: whatlanggo, a baseline of the benchmark only.
//   - bench_baselines.go, bench_lingua.go (build tag petrelbench):
//     lingua-go beside them.
//   - lang_test.go, golden_test.go: Detect (fixed answers, edge cases),
//     .mo reading, codes; corpus_test.go: the split's families, roff;
//     bench_test.go: the benchmark as a test, with PETREL_LANG_BENCH=1;
//     prefix_test.go: accuracy and time of Detect on the first N KiB of
//     long man pages, with PETREL_LANG_BENCH=1; table_test.go: the tables
//     against the file's entries scored one by one; margin_test.go:
//     accuracy and grams scored against the early stop's margin, with
//     PETREL_LANG_BENCH=1.
package lang

//go:generate go run ./gen -locale /usr/share/locale -o model.bin
