package extract

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"syscall"
	"time"

	"github.com/petrel-crawler/petrel/internal/parse"
	"github.com/petrel-crawler/petrel/internal/urlx"
)

// BenchOptions configure RunBench.
type BenchOptions struct {
	// Data is a copy of the Scrapinghub article-extraction benchmark: its
	// ground-truth.json and html/<id>.html.gz.
	Data string
	// Repeat is how many times each page is extracted for the timing
	// (at least 1).
	Repeat int
	// Out, if set, is a directory where each extractor's output is written
	// as <name>.json in the benchmark's output format, for its own
	// evaluate.py.
	Out string
}

// BenchResult is one extractor's figures.
type BenchResult struct {
	Name  string `json:"name"`
	Pages int    `json:"pages"`
	Scores
	Failed         int     `json:"failed"`           // pages that gave an error
	CPUPerPageUS   float64 `json:"cpu_us_per_page"`  // process CPU time per page
	WallPerPageUS  float64 `json:"wall_us_per_page"` // elapsed time per page
	AllocPerPageKB float64 `json:"alloc_kib_per_page"`
	MeanPageKB     float64 `json:"mean_page_kib"`
}

// benchExtractor is an extractor under test: it returns a page's main
// text as plain text.
type benchExtractor struct {
	name string
	fn   func(page []byte, url string) (string, error)
}

// petrelText is MainText as the benchmark sees it: the blocks as plain
// text, without the title.
func petrelText(page []byte, _ string) (string, error) {
	d, err := MainText(page, "")
	return d.Text(), err
}

// benchPage is one page of the benchmark.
type benchPage struct {
	id, url, truth string
	html           []byte
}

// RunBench measures MainText (and, in a build with -tags petrelbench,
// go-readability beside it) on the article-extraction benchmark in
// o.Data: precision, recall, F1 and accuracy as its evaluate.py computes
// them, and CPU per page, with the crawl's own parse pass timed on the
// same pages for scale. It writes the results as JSON to jsonOut and a
// table to tableOut.
func RunBench(ctx context.Context, o BenchOptions, jsonOut, tableOut io.Writer) error {
	pages, err := loadBench(o.Data)
	if err != nil {
		return err
	}
	o.Repeat = max(o.Repeat, 1)
	exts := append([]benchExtractor{{"petrel", petrelText}}, baselines()...)
	var results []BenchResult
	fmt.Fprintf(tableOut, "%-14s %6s %7s %9s %7s %8s %12s %10s\n", "extractor", "pages", "F1", "precision", "recall", "accuracy", "CPU µs/page", "KiB alloc")
	for _, x := range exts {
		if err := ctx.Err(); err != nil {
			return err
		}
		r, out, err := benchOne(x, pages, o.Repeat)
		if err != nil {
			return err
		}
		if o.Out != "" {
			if err := writeOutput(filepath.Join(o.Out, x.name+".json"), out); err != nil {
				return err
			}
		}
		results = append(results, r)
		fmt.Fprintf(tableOut, "%-14s %6d %7.3f %9.3f %7.3f %8.3f %12.0f %10.0f\n", r.Name, r.Pages, r.F1, r.Precision, r.Recall, r.Accuracy, r.CPUPerPageUS, r.AllocPerPageKB)
	}
	scale := parseCost(pages, o.Repeat)
	fmt.Fprintf(tableOut, "for scale: the crawl's own parse pass (parse.HTML) takes %.0f CPU µs per page of these (mean page %.0f KiB)\n", scale, results[0].MeanPageKB)
	enc := json.NewEncoder(jsonOut)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		Extractors      []BenchResult `json:"extractors"`
		ParseCPUPerPage float64       `json:"parse_cpu_us_per_page"`
	}{results, scale})
}

// parseCost returns the CPU time per page, in µs, of the crawl's parse
// pass (links, title, digests) over pages.
func parseCost(pages []benchPage, repeat int) float64 {
	h := http.Header{}
	cpu0 := cpuTime()
	for range repeat {
		for _, pg := range pages {
			base, err := urlx.Parse(pg.url)
			if err != nil {
				base, _ = urlx.Parse("https://example.com/")
			}
			parse.HTML(base, h, pg.html, parse.Options{})
		}
	}
	return float64((cpuTime() - cpu0).Microseconds()) / float64(repeat*len(pages))
}

// benchOne runs x over pages: once for the scores, repeat times for the
// timing. It returns the figures and the text of each page by id.
func benchOne(x benchExtractor, pages []benchPage, repeat int) (BenchResult, map[string]string, error) {
	r := BenchResult{Name: x.name, Pages: len(pages)}
	out := make(map[string]string, len(pages))
	matches := make([]Match, 0, len(pages))
	exact, bytes := 0, 0
	for _, pg := range pages {
		text, err := x.fn(pg.html, pg.url)
		if err != nil {
			r.Failed++
		}
		out[pg.id] = text
		matches = append(matches, Compare(pg.truth, text))
		if SameTokens(pg.truth, text) {
			exact++
		}
		bytes += len(pg.html)
	}
	r.Scores = Summarize(matches, exact)
	r.MeanPageKB = float64(bytes) / float64(len(pages)) / 1024

	runtime.GC()
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	cpu0, wall0 := cpuTime(), time.Now()
	for range repeat {
		for _, pg := range pages {
			_, _ = x.fn(pg.html, pg.url)
		}
	}
	cpu, wall := cpuTime()-cpu0, time.Since(wall0)
	runtime.ReadMemStats(&ms1)
	n := float64(len(pages) * repeat)
	r.CPUPerPageUS = float64(cpu.Microseconds()) / n
	r.WallPerPageUS = float64(wall.Microseconds()) / n
	r.AllocPerPageKB = float64(ms1.TotalAlloc-ms0.TotalAlloc) / n / 1024
	return r, out, nil
}

// cpuTime returns the CPU time the process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// loadBench reads the benchmark's pages and truths, sorted by id.
func loadBench(dir string) ([]benchPage, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "ground-truth.json"))
	if err != nil {
		return nil, fmt.Errorf("extract bench: %w (want the article-extraction benchmark's directory)", err)
	}
	var truth map[string]struct {
		ArticleBody string `json:"articleBody"`
		URL         string `json:"url"`
	}
	if err := json.Unmarshal(raw, &truth); err != nil {
		return nil, fmt.Errorf("extract bench: ground-truth.json: %w", err)
	}
	pages := make([]benchPage, 0, len(truth))
	for id, t := range truth {
		html, err := readGzip(filepath.Join(dir, "html", id+".html.gz"))
		if err != nil {
			return nil, fmt.Errorf("extract bench: %w", err)
		}
		pages = append(pages, benchPage{id: id, url: t.URL, truth: t.ArticleBody, html: html})
	}
	if len(pages) == 0 {
		return nil, fmt.Errorf("extract bench: %s: ground-truth.json holds no pages", dir)
	}
	sort.Slice(pages, func(i, j int) bool { return pages[i].id < pages[j].id })
	return pages, nil
}

// readGzip returns the content of a gzip file.
func readGzip(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	b, err := io.ReadAll(z)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return b, nil
}

// writeOutput writes texts by id in the benchmark's output format.
func writeOutput(path string, texts map[string]string) error {
	out := make(map[string]map[string]string, len(texts))
	for id, t := range texts {
		out[id] = map[string]string{"articleBody": t}
	}
	b, err := json.Marshal(out)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}
