// Command petrel is a polite, BUbiNG-style web crawler.
//
// Subcommands: crawl, cluster, config, demo, testweb, bench, warc, version. Run
// "petrel help CMD" for each one's flags.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/petrel-crawler/petrel/internal/agent"
)

// exitUsage is the exit code for bad flags, seeds, config or directory.
const exitUsage = 2

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := &cobra.Command{
		Use:           "petrel",
		Short:         "Petrel: a polite, distributable web crawler",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       agent.Version,
	}
	root.SetVersionTemplate("petrel {{.Version}}\n")
	root.SetFlagErrorFunc(flagHint(os.Args[1:])) // inherited by every command
	root.AddCommand(crawlCmd(), clusterCmd(), configCmd(), demoCmd(), testwebCmd(), benchCmd(), warcCmd(), whyCmd(), versionCmd())
	var cpuPath, memProfile string
	var cpuProfileDelay time.Duration
	root.PersistentFlags().StringVar(&cpuPath, "cpuprofile", "", "write a CPU profile to this file, at exit or at the first SIGINT or SIGTERM (a process killed with SIGKILL leaves it empty)")
	root.PersistentFlags().DurationVar(&cpuProfileDelay, "cpuprofile-delay", 0, "start the CPU profile this long after the start (to profile the later part of a long run)")
	root.PersistentFlags().StringVar(&memProfile, "memprofile", "", "write an allocation profile to this file at exit")
	var cpu *cpuProfile
	root.PersistentPreRunE = func(*cobra.Command, []string) error {
		if cpuPath == "" {
			return nil
		}
		var err error
		if cpu, err = startCPUProfile(ctx, cpuPath, cpuProfileDelay); err != nil {
			return flagError{err}
		}
		return nil
	}
	err := root.ExecuteContext(ctx)
	if cpu != nil {
		cpu.stop()
	}
	if memProfile != "" {
		if f, perr := os.Create(memProfile); perr == nil {
			pprof.Lookup("allocs").WriteTo(f, 0)
			f.Close()
		}
	}
	if err == nil {
		return
	}
	fmt.Fprintln(os.Stderr, "petrel:", err)
	var complete *agent.CompleteError
	if errors.As(err, &complete) {
		return // nothing to do is not a failure
	}
	var fe flagError
	if errors.Is(err, agent.ErrUsage) || errors.As(err, &fe) || isCobraUsage(err) {
		os.Exit(exitUsage)
	}
	os.Exit(1)
}

// flagError marks an error in the command line.
type flagError struct{ error }

func isCobraUsage(err error) bool {
	s := err.Error()
	for _, p := range []string{"unknown flag", "unknown command", "invalid argument", "flag needs an argument", "unknown shorthand", "accepts ", "requires "} {
		if len(s) >= len(p) && contains(s, p) {
			return true
		}
	}
	return false
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

func versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print Petrel's version",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintln(cmd.OutOrStdout(), "petrel", agent.Version)
		},
	}
}
