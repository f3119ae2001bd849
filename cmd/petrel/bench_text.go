package main

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/petrel-crawler/petrel/internal/extract"
	"github.com/petrel-crawler/petrel/internal/lang"
)

func benchExtractCmd() *cobra.Command {
	var o extract.BenchOptions
	cmd := &cobra.Command{
		Use:   "extract",
		Short: "Measure main-text extraction on the Scrapinghub article-extraction benchmark (F1 and CPU per page; go-readability beside it with -tags petrelbench)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return extract.RunBench(cmd.Context(), o, os.Stdout, os.Stderr)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.Data, "data", "", "the benchmark's directory (ground-truth.json, html/*.html.gz)")
	fs.IntVar(&o.Repeat, "repeat", 5, "extractions of each page for the timing")
	fs.StringVar(&o.Out, "out", "", "write each extractor's texts here as <name>.json, for the benchmark's evaluate.py")
	_ = cmd.MarkFlagRequired("data")
	return cmd
}

func benchLangCmd() *cobra.Command {
	var o lang.BenchOptions
	cmd := &cobra.Command{
		Use:   "lang",
		Short: "Measure language identification on Debian's translations (.mo files) held out of training and on man pages: accuracy, CPU per page, memory (whatlanggo beside it; lingua-go too with -tags petrelbench)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return lang.RunBench(cmd.Context(), o, os.Stdout, os.Stderr)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.Locale, "locale", "/usr/share/locale", "directory of translations (<locale>/LC_MESSAGES/*.mo)")
	fs.IntVar(&o.SampleBytes, "sample-bytes", 300, "length of a sample, made of translated messages")
	fs.IntVar(&o.PerLanguage, "per-language", 50, "samples of one language, at most")
	fs.IntVar(&o.MinSamples, "min-samples", 20, "samples a language needs to be measured")
	fs.IntVar(&o.Repeat, "repeat", 3, "detections of each 3 KB page for the timing")
	fs.StringVar(&o.Man, "man", "/usr/share/man", "directory of man pages, a second corpus (<man>/<locale>/man*/, English <man>/man*/); empty for none")
	return cmd
}
