package main

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
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
