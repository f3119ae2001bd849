package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/petrel-crawler/petrel/internal/cluster"
)

func clusterForgetCmd() *cobra.Command {
	var cf controlFlags
	cmd := &cobra.Command{
		Use:   "forget NAME --coordinators NAME@IP:PORT,... --cluster-key-file FILE",
		Short: "Take a dead agent out of the crawl for good: its keys go to the others and the crawl may end without it (what only it held is given up, and logged)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !cluster.ValidName(args[0]) {
				return flagError{fmt.Errorf("agent name %q: want 1 to 64 letters, digits, '.', '-' or '_'", args[0])}
			}
			crawl, closeCrawl, ctx, cancel, err := cf.open(cmd.Context(), 5*time.Minute)
			if err != nil {
				return err
			}
			defer cancel()
			defer closeCrawl()
			msg, err := cluster.Forget(ctx, crawl, args[0])
			if err != nil {
				return fmt.Errorf("the crawl did not forget %s: %w", args[0], err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "petrel: %s\n", msg)
			return nil
		},
	}
	cf.bind(cmd.Flags())
	return cmd
}
