package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/petrel-crawler/petrel/internal/agent"
)

const crawlExamples = `  petrel crawl https://example.org/
  petrel crawl --seeds seeds.txt --scope domain --max-urls 10000 --dir crawl-example
  petrel crawl --config crawl.toml --max-body 1MiB     # flags override the file
  petrel crawl --dir crawl-example                     # resume a stopped crawl
  petrel config defaults > crawl.toml                  # every setting, commented`

func crawlCmd() *cobra.Command {
	cfg := agent.Defaults()
	table := cfg.Table()
	var configFile string
	cmd := &cobra.Command{
		Use:     "crawl [flags] [URL...]",
		Short:   "Crawl from the seeds until nothing reachable is left or a limit is hit",
		Example: crawlExamples,
		RunE: func(cmd *cobra.Command, args []string) error {
			final, err := withConfigFile(cfg, configFile, cmd.Flags())
			if err != nil {
				return err
			}
			final.SeedURLs = append(final.SeedURLs, args...)
			cmd.Flags().Visit(func(f *pflag.Flag) {
				if table.Lookup(f.Name) != nil {
					final.Given = append(final.Given, f.Name)
				}
			})
			ctx, cancel := context.WithCancel(cmd.Context())
			defer cancel()
			go newMemoryLimit(&final, os.Stderr).follow(ctx, memoryLimitEvery)
			a, err := agent.Open(final, os.Stderr)
			if errors.Is(err, agent.ErrFinished) {
				fmt.Fprintf(os.Stderr, "petrel: the crawl in %s is finished (state/FINISHED); nothing to do\n", final.Dir)
				return nil
			}
			if err != nil {
				return err
			}
			usr1 := make(chan os.Signal, 1)
			signal.Notify(usr1, syscall.SIGUSR1)
			defer func() {
				signal.Stop(usr1)
				close(usr1)
			}()
			go func() {
				for range usr1 {
					a.RequestCheckpoint()
				}
			}()
			return a.Run(ctx)
		},
	}
	table.Flags(cmd.Flags())
	cmd.Flags().StringVar(&configFile, "config", "", "TOML file with any of these settings (flags override it)")
	for _, s := range table {
		if len(s.Choices) > 0 {
			cmd.RegisterFlagCompletionFunc(s.Name, cobra.FixedCompletions(s.Choices, cobra.ShellCompDirectiveNoFileComp))
		}
	}
	cmd.SetUsageFunc(func(c *cobra.Command) error {
		w := c.OutOrStderr()
		fmt.Fprintf(w, "Usage:\n  %s\n\nExamples:\n%s\n", c.UseLine(), c.Example)
		other := pflag.NewFlagSet("other", pflag.ContinueOnError)
		add := func(f *pflag.Flag) {
			if table.Lookup(f.Name) == nil && other.Lookup(f.Name) == nil {
				other.AddFlag(f)
			}
		}
		c.Flags().VisitAll(add)
		c.InheritedFlags().VisitAll(add)
		table.Usage(w, other)
		fmt.Fprintln(w, "\nSizes take 1024, 64KiB, 8MiB, 1GiB or 500kB; durations 500ms, 2s, 1h30m.")
		return nil
	})
	return cmd
}

// withConfigFile returns the settings of the command line over those of
// the TOML file (over the defaults); without a file, cfg as parsed.
func withConfigFile(cfg agent.Config, file string, flags *pflag.FlagSet) (agent.Config, error) {
	if file == "" {
		return cfg, nil
	}
	final := agent.Defaults()
	if err := final.LoadFile(file); err != nil {
		return final, fmt.Errorf("%w: %v", agent.ErrUsage, err)
	}
	table := final.Table()
	var setErr error
	flags.Visit(func(f *pflag.Flag) {
		if s := table.Lookup(f.Name); s != nil && setErr == nil {
			setErr = s.Set(f.Value.String())
		}
	})
	if setErr != nil {
		return final, flagError{setErr}
	}
	return final, nil
}

func configCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Show the crawl's settings",
	}
	var asJSON bool
	defaults := &cobra.Command{
		Use:   "defaults",
		Short: "Print every setting of petrel crawl with its default, as a commented TOML file (or --json)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg := agent.Defaults()
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), cfg.Table().Map())
			}
			return cfg.Table().WriteDefaults(cmd.OutOrStdout())
		},
	}
	defaults.Flags().BoolVar(&asJSON, "json", false, "print the JSON form (name → value) instead")
	cmd.AddCommand(defaults)
	return cmd
}

// flagTable is the README's table of petrel crawl's flags.
func flagTable() string {
	cfg := agent.Defaults()
	var b strings.Builder
	cfg.Table().Markdown(&b, "| `--config FILE` | | no | no | TOML file with any of these settings; flags override it |")
	return b.String()
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
