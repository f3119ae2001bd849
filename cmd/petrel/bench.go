package main

import (
	"github.com/spf13/cobra"
)

func benchCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "bench", Short: "Benchmarks: sieve"}
	cmd.AddCommand(benchSieveCmd())
	return cmd
}
