package lang

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"time"
)

// BenchOptions configure RunBench.
type BenchOptions struct {
	// Locale is the directory of translations: <locale>/LC_MESSAGES/*.mo.
	Locale string
	// SampleBytes is the length a sample is made up to from translated
	// messages (a paragraph).
	SampleBytes int
	// PerLanguage caps the samples of one language; MinSamples is the
	// fewest a language needs to be measured.
	PerLanguage, MinSamples int
	// Repeat is how many times the pages are detected for the timing.
	Repeat int
	// Man is a directory of man pages (/usr/share/man) measured on as a
	// second corpus, one the model was not trained on; "" for none.
	Man string
}

// BenchResult is one detector's figures.
type BenchResult struct {
	Corpus    string  `json:"corpus"` // "mo" (held-out translations) or "man" (man pages)
	Name      string  `json:"name"`
	Languages int     `json:"languages"` // languages measured
	Known     int     `json:"known"`     // of them, those the detector knows
	Samples   int     `json:"samples"`
	Accuracy  float64 `json:"accuracy"`       // first language right, all samples
	KnownAcc  float64 `json:"accuracy_known"` // the same over the languages it knows
	CommonAcc float64 `json:"accuracy_common"`
	// Mixed: share of two-language texts (2/3 one, 1/3 the other) whose
	// first two languages are those, in that order.
	Mixed        float64 `json:"mixed"`
	CPUPerPageUS float64 `json:"cpu_us_per_page"` // a page: 3 KB of text in lines
	HeapMiB      float64 `json:"heap_mib"`        // Go heap in use after it ran, GC'd
	MaxRSSMiB    float64 `json:"max_rss_mib"`     // the process's peak RSS after it ran
}

// benchDetector is a detector under test: one chunk to an ISO 639-3 code
// ("" for unsure), and the languages it knows.
type benchDetector struct {
	name  string
	known map[string]bool
	build func() func(string) string // builds the detector, loading its models
}

// sample is a labelled text.
type sample struct {
	code, text string
}

// ngramBench is Detect's own detector, the n-gram model.
func ngramBench() benchDetector {
	m := loadModel()
	return benchDetector{name: "petrel-ngram", known: m.knows(), build: func() func(string) string { return m.detect }}
}

// whatlangBench is whatlanggo, the library Detect used before its own
// model.
func whatlangBench() benchDetector {
	knows := map[string]bool{}
	for l := 0; l < 200; l++ { // whatlanggo numbers its languages from 0
		if c := whatlangCode(l); c != "" {
			knows[c] = true
		}
	}
	return benchDetector{name: "whatlanggo", known: knows, build: func() func(string) string { return whatlang }}
}

// RunBench measures Detect's model beside whatlanggo (and lingua-go, in a
// build with -tags petrelbench) on samples of the held-out half of the
// translations in o.Locale and, if o.Man is set, on the man pages under
// o.Man: the first language's accuracy, two-language texts, CPU per 3 KB
// page and memory. It writes a JSON array of BenchResult to jsonOut and a
// table to tableOut.
func RunBench(ctx context.Context, o BenchOptions, jsonOut, tableOut io.Writer) error {
	o.defaults()
	c, err := readCorpus(o.Locale)
	if err != nil {
		return err
	}
	samples, err := loadSamples(c, o)
	if err != nil {
		return err
	}
	dets := append([]benchDetector{ngramBench(), whatlangBench()}, baselines()...)
	fmt.Fprintf(tableOut, "held-out translations under %s: ", o.Locale)
	results, err := benchCorpus(ctx, "mo", samples, dets, o, tableOut)
	if err != nil {
		return err
	}
	if o.Man != "" {
		man, dropped, err := loadManSamples(o.Man, o, c.trainedKeys())
		if err != nil {
			return err
		}
		fmt.Fprintf(tableOut, "man pages under %s (%d paragraphs left out, trained on): ", o.Man, dropped)
		r, err := benchCorpus(ctx, "man", man, dets, o, tableOut)
		if err != nil {
			return err
		}
		results = append(results, r...)
	}
	enc := json.NewEncoder(jsonOut)
	enc.SetIndent("", "  ")
	return enc.Encode(results)
}

// trainedKeys returns the letters (lettersKey) of every message trained
// on, in any language.
func (c corpus) trainedKeys() map[string]bool {
	trained := map[string]bool{}
	for _, set := range c.train {
		for m := range set {
			trained[lettersKey(m)] = true
		}
	}
	return trained
}

// benchCorpus measures each detector on the samples of one corpus and
// writes a table of the figures.
func benchCorpus(ctx context.Context, corpus string, samples []sample, dets []benchDetector, o BenchOptions, tableOut io.Writer) ([]BenchResult, error) {
	langs := map[string][]sample{}
	for _, s := range samples {
		langs[s.code] = append(langs[s.code], s)
	}
	fmt.Fprintf(tableOut, "%d samples of %d bytes in %d languages\n", len(samples), o.SampleBytes, len(langs))
	fmt.Fprintf(tableOut, "%-12s %6s %9s %14s %15s %6s %13s %9s %9s\n", "detector", "known", "accuracy", "accuracy-known", "accuracy-common", "mixed", "CPU µs/page", "heap MiB", "RSS MiB")
	common := map[string]bool{}
	for code := range langs {
		all := true
		for _, d := range dets {
			all = all && d.known[code]
		}
		common[code] = all
	}
	var results []BenchResult
	for _, d := range dets {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		r := benchOne(d, d.build(), samples, langs, common, o.Repeat)
		r.Corpus = corpus
		results = append(results, r)
		fmt.Fprintf(tableOut, "%-12s %6d %9.3f %14.3f %15.3f %6.3f %13.0f %9.0f %9.0f\n", r.Name, r.Known, r.Accuracy, r.KnownAcc, r.CommonAcc, r.Mixed, r.CPUPerPageUS, r.HeapMiB, r.MaxRSSMiB)
	}
	return results, nil
}

func (o *BenchOptions) defaults() {
	if o.Locale == "" {
		o.Locale = "/usr/share/locale"
	}
	if o.SampleBytes <= 0 {
		o.SampleBytes = 300
	}
	if o.PerLanguage <= 0 {
		o.PerLanguage = 50
	}
	if o.MinSamples <= 0 {
		o.MinSamples = 20
	}
	o.Repeat = max(o.Repeat, 1)
}

// benchOne measures one detector.
func benchOne(d benchDetector, detect func(string) string, samples []sample, langs map[string][]sample, common map[string]bool, repeat int) BenchResult {
	r := BenchResult{Name: d.name, Languages: len(langs), Samples: len(samples)}
	var right, known, knownRight, com, comRight int
	for _, s := range samples {
		got := shares(s.text, detect)
		ok := len(got) > 0 && got[0].Code == s.code
		right += b2i(ok)
		if d.known[s.code] {
			known++
			knownRight += b2i(ok)
		}
		if common[s.code] {
			com++
			comRight += b2i(ok)
		}
	}
	for code := range langs {
		r.Known += b2i(d.known[code])
	}
	r.Accuracy = ratio(right, len(samples))
	r.KnownAcc = ratio(knownRight, known)
	r.CommonAcc = ratio(comRight, com)
	r.Mixed = mixed(langs, common, detect)

	pages := benchPages(langs)
	cpu0 := cpuTime()
	for range repeat {
		for _, p := range pages {
			shares(p, detect)
		}
	}
	r.CPUPerPageUS = float64((cpuTime() - cpu0).Microseconds()) / float64(repeat*len(pages))
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	r.HeapMiB = float64(ms.HeapInuse) / (1 << 20)
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		r.MaxRSSMiB = float64(ru.Maxrss) / 1024
	}
	return r
}

// mixed returns the share of two-language texts, over the languages every
// detector knows, whose first two languages come out in order.
func mixed(langs map[string][]sample, common map[string]bool, detect func(string) string) float64 {
	var codes []string
	for c := range langs {
		if common[c] && len(langs[c]) >= 3 {
			codes = append(codes, c)
		}
	}
	sort.Strings(codes)
	right := 0
	for i, a := range codes {
		b := codes[(i+1)%len(codes)]
		text := langs[a][0].text + "\n" + langs[a][1].text + "\n" + langs[b][2].text
		got := shares(text, detect)
		right += b2i(len(got) >= 2 && got[0].Code == a && got[1].Code == b)
	}
	return ratio(right, len(codes))
}

// benchPages joins each language's samples, one a line, into pages of
// about 3 KB.
func benchPages(langs map[string][]sample) []string {
	var pages []string
	for _, ss := range langs {
		var b strings.Builder
		for _, s := range ss {
			b.WriteString(s.text)
			b.WriteByte('\n')
			if b.Len() >= 3000 {
				pages = append(pages, b.String())
				b.Reset()
			}
		}
	}
	sort.Strings(pages)
	return pages
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func ratio(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// cpuTime returns the CPU time the process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// loadSamples makes the samples of the held-out half of the translations
// (c.test): each language's messages shuffled in a fixed order and joined
// into samples of o.SampleBytes.
func loadSamples(c corpus, o BenchOptions) ([]sample, error) {
	var out []sample
	for code, set := range c.test {
		out = append(out, samplesOf(code, set, o)...)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("lang bench: no held-out translations under %s", o.Locale)
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].code < out[j].code || out[i].code == out[j].code && out[i].text < out[j].text
	})
	return out, nil
}

// samplesOf joins one language's messages, in the order of their hashes,
// into samples.
func samplesOf(code string, set map[string]bool, o BenchOptions) []sample {
	msgs := make([]string, 0, len(set))
	for m := range set {
		msgs = append(msgs, m)
	}
	h := func(s string) uint64 { f := fnv.New64a(); f.Write([]byte(s)); return f.Sum64() }
	sort.Slice(msgs, func(i, j int) bool { return h(msgs[i]) < h(msgs[j]) })
	var out []sample
	var b strings.Builder
	for _, m := range msgs {
		if len(out) == o.PerLanguage {
			break
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(m)
		if b.Len() >= o.SampleBytes {
			out = append(out, sample{code, b.String()})
			b.Reset()
		}
	}
	if len(out) < o.MinSamples {
		return nil
	}
	return out
}
