package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/petrel-crawler/petrel/internal/store"
)

func warcCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "warc", Short: "Inspect WARC files"}
	cmd.AddCommand(&cobra.Command{
		Use:   "ls FILE...",
		Short: "List the records of WARC files",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, p := range args {
				if err := store.ListRecords(p, cmd.OutOrStdout()); err != nil {
					return err
				}
			}
			return nil
		},
	}, &cobra.Command{
		Use:   "check FILE...",
		Short: "Read WARC files through and validate every digest",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, p := range args {
				n, err := store.CheckFile(p)
				if err != nil {
					return fmt.Errorf("%s: %w", p, err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s: %d records, digests ok\n", p, n)
			}
			return nil
		},
	}, &cobra.Command{
		Use:   "cdxj FILE...",
		Short: "Write a CDXJ index of WARC files to stdout",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, p := range args {
				if err := store.WriteCDXJ(p, os.Stdout); err != nil {
					return err
				}
			}
			return nil
		},
	})
	return cmd
}
