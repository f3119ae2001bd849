package main

import (
	"context"
	"fmt"
	"strings"
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
			cl, addrs, err := cf.open()
			if err != nil {
				return err
			}
			defer cl.Close()
			ctx, cancel := context.WithTimeout(cmd.Context(), 30*time.Second)
			defer cancel()
			for _, a := range addrs {
				var msg string
				if msg, err = cl.Forget(ctx, a, args[0]); err == nil {
					fmt.Fprintf(cmd.OutOrStdout(), "petrel: %s", msg)
					return nil
				}
				if se, ok := err.(*cluster.StatusError); ok && se.Code == 409 {
					return fmt.Errorf("the crawl refused to forget %s: %s", args[0], se.Body)
				}
			}
			return fmt.Errorf("no agent answered at %s: %v", strings.Join(addrs, ","), err)
		},
	}
	cf.bind(cmd.Flags())
	return cmd
}
