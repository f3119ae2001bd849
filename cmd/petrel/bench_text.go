package main

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/petrel-crawler/petrel/internal/extract"
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
