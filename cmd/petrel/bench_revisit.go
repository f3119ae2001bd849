package main

import (
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/petrel-crawler/petrel/internal/benchrevisit"
	"github.com/petrel-crawler/petrel/internal/revisit"
)

func benchRevisitCmd() *cobra.Command {
	o := benchrevisit.Options{FirstIP: netip.MustParseAddr("127.75.0.1")}
	var policies string
	cmd := &cobra.Command{
		Use:   "revisit",
		Short: "Crawl the changing synthetic web with petrel crawl --revisit once per revisit policy at one budget; freshness, age and bytes from the web's log",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Policies = strings.Split(policies, ",")
			for _, p := range o.Policies {
				if !slices.Contains(revisit.Policies, p) {
					return flagError{fmt.Errorf("--policies: unknown policy %q (want %s)", p, strings.Join(revisit.Policies, ", "))}
				}
			}
			if o.Petrel == "" {
				exe, err := os.Executable()
				if err != nil {
					return err
				}
				o.Petrel = exe
			}
			if o.Dir == "" {
				d, err := os.MkdirTemp("", "petrel-bench-revisit-")
				if err != nil {
					return err
				}
				defer os.RemoveAll(d)
				o.Dir = d
			}
			return benchrevisit.Run(cmd.Context(), o, os.Stdout, os.Stderr)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&policies, "policies", strings.Join(revisit.Policies, ","), "revisit policies to compare, in order")
	fs.Float64Var(&o.Budget, "budget", 5, "--revisit-budget of every crawl (revisits a second)")
	fs.DurationVar(&o.Day, "day", 2*time.Minute, "how long a day of the changing web lasts")
	fs.DurationVar(&o.Duration, "duration", 2*time.Minute, "length of each crawl")
	fs.IntVar(&o.Hosts, "web-hosts", 20, "hosts of the changing web")
	fs.IntVar(&o.Pages, "web-pages", 20, "pages per host")
	fs.DurationVar(&o.HostDelay, "host-delay", 100*time.Millisecond, "host delay of every crawl")
	fs.DurationVar(&o.IPDelay, "ip-delay", 20*time.Millisecond, "IP delay of every crawl")
	fs.DurationVar(&o.Min, "revisit-min", 5*time.Second, "--revisit-min (default: an hour of the default day)")
	fs.DurationVar(&o.Max, "revisit-max", 56*time.Minute, "--revisit-max (default: four weeks of the default day)")
	fs.StringVar(&o.Dir, "dir", "", "scratch directory (default: a temporary one, removed)")
	fs.Var(loopbackV4{&o.FirstIP}, "web-first-ip", "first loopback address of the first policy's web; the next policies' take the next /24s (to run sittings side by side)")
	fs.StringVar(&o.Petrel, "petrel", "", "petrel binary crawling (default: this one)")
	return cmd
}

// loopbackV4 is a flag of an IPv4 loopback address.
type loopbackV4 struct{ a *netip.Addr }

func (l loopbackV4) String() string {
	if l.a == nil || !l.a.IsValid() {
		return ""
	}
	return l.a.String()
}

func (l loopbackV4) Set(s string) error {
	a, err := netip.ParseAddr(s)
	if err != nil || !a.Is4() || !a.IsLoopback() {
		return fmt.Errorf("%q: want a 127.x.y.z address", s)
	}
	*l.a = a
	return nil
}

func (loopbackV4) Type() string { return "addr" }
