package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/petrel-crawler/petrel/internal/agent"
	"github.com/petrel-crawler/petrel/internal/store"
)

// languagesHelp is the help of the --languages flag of the commands that
// index WARC files.
const languagesHelp = "give each 2xx HTML or text/plain page's line its languages field, detected in its stored payload as a crawl's --languages detects them"

// indexOptions are the options of an index made from WARC files: with
// the pages' languages when langs is set.
func indexOptions(langs bool) store.IndexOptions {
	if !langs {
		return store.IndexOptions{}
	}
	return store.IndexOptions{Languages: agent.PageLanguages{}}
}

func cdxjCmd() *cobra.Command {
	var langs bool
	cmd := &cobra.Command{
		Use:   "cdxj [--languages] FILE|DIR...",
		Short: "Write one CDXJ index of WARC files to stdout, sorted as a whole (LC_ALL=C order)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return store.WriteCDXJ(args, cmd.OutOrStdout(), indexOptions(langs))
		},
	}
	cmd.Flags().BoolVar(&langs, "languages", false, languagesHelp)
	return cmd
}

func indexCmd() *cobra.Command {
	var langs bool
	cmd := &cobra.Command{
		Use:   "index [--languages] CRAWL-DIR...",
		Short: "Write each crawl directory's merged, sorted index, indexes/index.cdxj (and any missing per-file index)",
		Long: `Write each crawl directory's merged, sorted index, indexes/index.cdxj, from
the per-file indexes NAME.cdxj beside its WARC files; a per-file index that
is missing or older than its WARC file is made again from the file (with
--languages, with the languages of its pages: remove a NAME.cdxj to have it
made again).`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var skipped int
			for _, d := range args {
				rep, err := store.IndexCrawl(d, indexOptions(langs))
				if err != nil {
					return err
				}
				for _, s := range rep.Skipped {
					fmt.Fprintf(cmd.ErrOrStderr(), "petrel: %v: left out of the index\n", s)
				}
				skipped += len(rep.Skipped)
				fmt.Fprintf(cmd.OutOrStdout(), "%s: %d captures indexed\n", store.MergedIndex(d), rep.Lines)
			}
			if skipped > 0 {
				return fmt.Errorf("%d WARC files cannot be read through: left out of the index", skipped)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&langs, "languages", false, languagesHelp)
	return cmd
}
