package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/petrel-crawler/petrel/internal/cluster"
)

func clusterCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Tools for a crawl of several agents: keygen, status, stop, forget",
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "keygen FILE",
		Short: "Write a new random cluster key to FILE (mode 0600); give the same file to every agent",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := cluster.WriteKeyFile(args[0]); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "petrel: wrote a new cluster key to %s (mode 0600); copy it to every agent's machine\n", args[0])
			return nil
		},
	})
	cmd.AddCommand(clusterStatusCmd(), clusterStopCmd(), clusterForgetCmd())
	return cmd
}

// controlFlags are the flags of the commands that call a running crawl's
// exchange (its authenticated control endpoint) without joining it.
type controlFlags struct {
	join         []string
	keyFile      string
	exchangePort int
}

func (c *controlFlags) bind(fs *pflag.FlagSet) {
	fs.StringSliceVar(&c.join, "join", nil, "membership address (IP:PORT) of an agent of the crawl")
	fs.StringVar(&c.keyFile, "cluster-key-file", "", "the crawl's key")
	fs.IntVar(&c.exchangePort, "exchange-port", 0, "the agents' exchange port (0: membership port + 1)")
}

// open returns a client and the exchange addresses to try.
func (c *controlFlags) open() (*cluster.Client, []string, error) {
	if len(c.join) == 0 || c.keyFile == "" {
		return nil, nil, flagError{errors.New("--join IP:PORT and --cluster-key-file FILE are required")}
	}
	k, err := cluster.ReadKeyFile(c.keyFile)
	if err != nil {
		return nil, nil, flagError{err}
	}
	cl, err := cluster.NewClient(k)
	if err != nil {
		return nil, nil, err
	}
	var addrs []string
	for _, j := range c.join {
		ap, err := netip.ParseAddrPort(j)
		if err != nil {
			return nil, nil, flagError{fmt.Errorf("--join %q: want IP:PORT", j)}
		}
		port := int(ap.Port()) + 1
		if c.exchangePort != 0 {
			port = c.exchangePort
		}
		addrs = append(addrs, netip.AddrPortFrom(ap.Addr(), uint16(port)).String())
	}
	return cl, addrs, nil
}

// finalError marks an error from a crawl's agent that another agent would
// answer the same way (a refusal, not a failure to reach it): each stops at it.
type finalError struct{ error }

// each opens the client and calls try with each exchange address in turn,
// under one timeout for them all, until a try returns nil (each returns nil)
// or a finalError (each returns its error). When no agent answers, each
// returns one error naming every address tried and the last failure.
func (c *controlFlags) each(ctx context.Context, timeout time.Duration, try func(ctx context.Context, cl *cluster.Client, addr string) error) error {
	cl, addrs, err := c.open()
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for _, a := range addrs {
		err = try(ctx, cl, a)
		var fe finalError
		if err == nil || errors.As(err, &fe) {
			return err
		}
	}
	return fmt.Errorf("no agent answered at %s: %v", strings.Join(addrs, ","), err)
}

func clusterStatusCmd() *cobra.Command {
	var cf controlFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status --join IP:PORT --cluster-key-file FILE [--json]",
		Short: "Show a running crawl's members, view and totals (over the authenticated exchange; never joins the gossip)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cf.each(cmd.Context(), 10*time.Second, func(ctx context.Context, cl *cluster.Client, addr string) error {
				first, err := cl.GetStatus(ctx, addr)
				if err != nil {
					return err
				}
				if err := showStatus(ctx, cmd, cl, first, asJSON); err != nil {
					return finalError{err} // printed in part: not again through another agent
				}
				return nil
			})
		},
	}
	cf.bind(cmd.Flags())
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// showStatus asks every other alive member that first lists for its status
// and prints them all, with the members that did not answer.
func showStatus(ctx context.Context, cmd *cobra.Command, cl *cluster.Client, first *cluster.Status, asJSON bool) error {
	all := []*cluster.Status{first}
	var missing []string
	for _, m := range first.Members {
		if m.Name == first.Name || m.Meta.Exchange == "" {
			continue
		}
		if m.State != "alive" {
			missing = append(missing, m.Name+" ("+m.State+")")
			continue
		}
		s, err := cl.GetStatus(ctx, m.Meta.Exchange)
		if err != nil {
			missing = append(missing, m.Name+" ("+err.Error()+")")
			continue
		}
		all = append(all, s)
	}
	if asJSON {
		enc := json.NewEncoder(cmd.OutOrStdout())
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"view": first.View, "agents": all, "unreachable": missing})
	}
	printStatus(cmd, first, all, missing)
	return nil
}

func printStatus(cmd *cobra.Command, first *cluster.Status, all []*cluster.Status, missing []string) {
	out := cmd.OutOrStdout()
	if first.View != nil {
		fmt.Fprintln(out, "view:", first.View.String())
	} else {
		fmt.Fprintln(out, "view: none yet")
	}
	tw := tabwriter.NewWriter(out, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "AGENT\tEXCHANGE\tINC\tEPOCH\tIDLE\tFETCHED\tQUEUED\tOUTBOX\tINBOX\tSENT\tRECEIVED\tHEARD")
	var fetched, queued int64
	var sent, recv uint64
	for _, s := range all {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%v\t%d\t%d\t%d\t%d\t%d\t%d\t%s\n", s.Name, s.Exchange, s.Incarnation, s.ViewEpoch,
			s.Idle, s.Fetched, s.Queued, s.OutboxBatches, s.InboxUnapplied, s.SentURLs, s.AppliedURLs, s.Time.Format(time.RFC3339))
		fetched += s.Fetched
		queued += s.Queued
		sent += s.SentURLs
		recv += s.AppliedURLs
	}
	tw.Flush()
	for _, m := range missing {
		fmt.Fprintln(out, "not answering:", m)
	}
	fmt.Fprintf(out, "total: %d agents answered, %d pages fetched, %d URLs queued, %d URLs sent, %d received; finished %v\n",
		len(all), fetched, queued, sent, recv, first.Finished)
}

func clusterStopCmd() *cobra.Command {
	var cf controlFlags
	cmd := &cobra.Command{
		Use:   "stop --join IP:PORT --cluster-key-file FILE",
		Short: "Stop every agent of a crawl cleanly (state saved, WARC files closed); the same commands resume it",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cf.each(cmd.Context(), 10*time.Second, func(ctx context.Context, cl *cluster.Client, addr string) error {
				if err := cl.Stop(ctx, addr); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "petrel: asked the crawl to stop (through %s); every agent stops cleanly and exits 0\n", addr)
				return nil
			})
		},
	}
	cf.bind(cmd.Flags())
	return cmd
}
