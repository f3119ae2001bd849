package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/petrel-crawler/petrel/internal/cluster"
)

func clusterForgetCmd() *cobra.Command {
	var cf controlFlags
	cmd := &cobra.Command{
		Use:   "forget NAME --join IP:PORT --cluster-key-file FILE",
		Short: "Take a dead agent out of the crawl for good: its keys go to the others and the crawl may end without it (what only it held is given up, and logged)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !cluster.ValidName(args[0]) {
				return flagError{fmt.Errorf("agent name %q: want 1 to 64 letters, digits, '.', '-' or '_'", args[0])}
			}
			return cf.each(cmd.Context(), 30*time.Second, func(ctx context.Context, cl *cluster.Client, addr string) error {
				msg, err := cl.Forget(ctx, addr, args[0])
				if se, ok := err.(*cluster.StatusError); ok && se.Code == 409 {
					return finalError{fmt.Errorf("the crawl refused to forget %s: %s", args[0], se.Body)}
				}
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "petrel: %s", msg)
				return nil
			})
		},
	}
	cf.bind(cmd.Flags())
	return cmd
}
