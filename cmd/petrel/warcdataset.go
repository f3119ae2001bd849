package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/petrel-crawler/petrel/internal/dataset"
)

// datasetCmds are "petrel warc wat", "wet" and "parquet".
func datasetCmds() []*cobra.Command {
	convert := func(use, short string, o *dataset.Options) *cobra.Command {
		return &cobra.Command{
			Use:   use + " FILE|DIR...",
			Short: short,
			Args:  cobra.MinimumNArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				files, err := warcFilesOf(args, cmd.ErrOrStderr(), "not converted")
				if err != nil {
					return err
				}
				for _, p := range files {
					res, err := dataset.Convert(p, *o)
					if err != nil {
						return err
					}
					out, n := dataset.WATName(p), res.WATBytes
					if o.WET {
						out, n = dataset.WETName(p), res.WETBytes
					}
					fmt.Fprintf(cmd.OutOrStdout(), "%s: %d records, %d pages, %d bytes\n", out, res.Records, res.Pages, n)
				}
				return nil
			},
		}
	}
	var out string
	parquet := &cobra.Command{
		Use:   "parquet DIR|FILE... [-o FILE.parquet]",
		Short: "Write the columnar index of WARC files (Common Crawl's cc-index-table columns) as Parquet",
		Long: `Write the columnar index of WARC files as one Parquet file: a row per
response and revisit record, with Common Crawl's cc-index-table columns and
content_simhash (docs/datasets.md), warc_filename relative to the first
directory given. Without -o it is DIR/indexes/cc-index.parquet.`,
		Example: `  petrel warc parquet crawl
  duckdb -c "SELECT url_host_registered_domain, count(*) FROM 'crawl/indexes/cc-index.parquet' GROUP BY 1"`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			files, err := warcFilesOf(args, cmd.ErrOrStderr(), "not indexed")
			if err != nil {
				return err
			}
			root := args[0]
			if fi, err := os.Stat(root); err != nil || !fi.IsDir() {
				root = filepath.Dir(root)
			}
			if out == "" {
				out = dataset.CrawlIndex(root)
			}
			rel := func(p string) string {
				if r, err := filepath.Rel(root, p); err == nil {
					return filepath.ToSlash(r)
				}
				return filepath.Base(p)
			}
			rep, err := dataset.WriteIndex(files, rel, out)
			if err != nil {
				return err
			}
			for _, s := range rep.Skipped {
				fmt.Fprintf(cmd.ErrOrStderr(), "petrel: %v: left out of the index\n", s)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: %d rows from %d WARC files\n", out, rep.Rows, rep.Files)
			if len(rep.Skipped) > 0 {
				return fmt.Errorf("%d WARC files cannot be read through: left out of the index", len(rep.Skipped))
			}
			return nil
		},
	}
	parquet.Flags().StringVarP(&out, "output", "o", "", "the Parquet file (default DIR/indexes/cc-index.parquet)")
	wetOpts := dataset.Options{WET: true}
	wet := convert("wet", "Write each WARC file's WET file (the text of its HTML pages, with their languages) beside it, NAME.warc.wet.gz", &wetOpts)
	wet.Flags().StringVar((*string)(&wetOpts.Text), "text", string(dataset.TextMain),
		"what a record holds: main (the page's main text) or all (the whole page's visible text)")
	return []*cobra.Command{
		convert("wat", "Write each WARC file's WAT file (Common Crawl's JSON metadata records) beside it, NAME.warc.wat.gz", &dataset.Options{WAT: true}),
		wet,
		parquet,
	}
}
