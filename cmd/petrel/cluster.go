package main

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/petrel-crawler/petrel/internal/cluster"
	"github.com/petrel-crawler/petrel/internal/coord"
)

func clusterCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Tools for a crawl of several agents: keygen, status, stop, forget, etcd-certs",
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
	cmd.AddCommand(clusterStatusCmd(), clusterStopCmd(), clusterForgetCmd(), clusterEtcdCertsCmd())
	return cmd
}

// controlFlags are the flags of the commands that read or write a
// running crawl's coordination (its etcd) without being an agent of it.
type controlFlags struct {
	coordinators string
	endpoints    []string
	keyFile      string
	crawlName    string
}

func (c *controlFlags) bind(fs *pflag.FlagSet) {
	fs.StringVar(&c.coordinators, "coordinators", "", "the crawl's coordinators, as given to its agents (NAME@IP:PORT,...)")
	fs.StringSliceVar(&c.endpoints, "etcd-endpoints", nil, "or the crawl's external etcd (https://IP:PORT,...)")
	fs.StringVar(&c.keyFile, "cluster-key-file", "", "the crawl's key")
	fs.StringVar(&c.crawlName, "cluster-name", "petrel", "the crawl's name (--cluster-name of its agents)")
}

// open connects to the crawl's etcd within timeout; close ends it.
func (c *controlFlags) open(ctx context.Context, timeout time.Duration) (*coord.Crawl, func(), context.Context, context.CancelFunc, error) {
	if c.coordinators == "" && len(c.endpoints) == 0 || c.keyFile == "" {
		return nil, nil, nil, nil, flagError{errors.New("--coordinators (or --etcd-endpoints) and --cluster-key-file FILE are required")}
	}
	var cs []coord.Coordinator
	if c.coordinators != "" {
		var err error
		if cs, err = coord.ParseCoordinators(c.coordinators); err != nil {
			return nil, nil, nil, nil, flagError{err}
		}
	}
	k, err := cluster.ReadKeyFile(c.keyFile)
	if err != nil {
		return nil, nil, nil, nil, flagError{err}
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	crawl, closeCrawl, err := cluster.DialCrawl(ctx, k, c.crawlName, cs, c.endpoints)
	if err != nil {
		cancel()
		return nil, nil, nil, nil, err
	}
	return crawl, closeCrawl, ctx, cancel, nil
}

func clusterStopCmd() *cobra.Command {
	var cf controlFlags
	cmd := &cobra.Command{
		Use:   "stop --coordinators NAME@IP:PORT,... --cluster-key-file FILE",
		Short: "Stop every agent of a crawl cleanly (state saved, WARC files closed), those still waiting for the crawl's first view too; the same commands resume it",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			crawl, closeCrawl, ctx, cancel, err := cf.open(cmd.Context(), 10*time.Second)
			if err != nil {
				return err
			}
			defer cancel()
			defer closeCrawl()
			if err := crawl.Stop(ctx, "petrel cluster stop"); err != nil {
				return fmt.Errorf("cluster stop: %w", err)
			}
			fmt.Fprintln(cmd.OutOrStdout(), "petrel: asked the crawl to stop; every agent stops cleanly and exits 0 (start the same commands again to resume)")
			return nil
		},
	}
	cf.bind(cmd.Flags())
	return cmd
}

func clusterEtcdCertsCmd() *cobra.Command {
	var keyFile, name, out string
	var ips []string
	cmd := &cobra.Command{
		Use:   "etcd-certs --cluster-key-file FILE --name NAME --ip IP[,IP] --out DIR",
		Short: "Write the TLS files of an external etcd member for the crawl (CA, certificate and key from the crawl's key): give them to etcd as --trusted-ca-file, --cert-file, --key-file (and the --peer- ones), with --client-cert-auth",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			k, err := cluster.ReadKeyFile(keyFile)
			if err != nil {
				return flagError{err}
			}
			var addrs []netip.Addr
			for _, ip := range ips {
				a, err := netip.ParseAddr(ip)
				if err != nil {
					return flagError{fmt.Errorf("--ip %q: want an IP address", ip)}
				}
				addrs = append(addrs, a)
			}
			f, err := cluster.EtcdCerts(k, name, addrs, out)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "petrel: wrote %s, %s and %s (mode 0600): etcd --trusted-ca-file %s --cert-file %s --key-file %s --client-cert-auth (and the same as --peer-*)\n",
				f.CA, f.Cert, f.Key, f.CA, f.Cert, f.Key)
			return nil
		},
	}
	cmd.Flags().StringVar(&keyFile, "cluster-key-file", "", "the crawl's key")
	cmd.Flags().StringVar(&name, "name", "etcd", "the etcd member's name")
	cmd.Flags().StringSliceVar(&ips, "ip", nil, "the addresses the member serves on (127.0.0.1 is always included)")
	cmd.Flags().StringVar(&out, "out", ".", "directory to write to")
	return cmd
}
