package main

import (
	"github.com/spf13/cobra"
)

func benchSieveCmd() *cobra.Command {
	return &cobra.Command{Use: "sieve", Short: "Benchmark the sieve (wired when the sieve bench lands)"}
}
