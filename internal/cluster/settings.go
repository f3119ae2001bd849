package cluster

import (
	"fmt"
	"strings"

	"net/netip"
	"time"

	"github.com/petrel-crawler/petrel/internal/coord"

	"github.com/petrel-crawler/petrel/internal/settings"
)

// Settings make a crawl one agent of a crawl of several. With Bind empty
// the crawl is a single agent and nothing here is used.
type Settings struct {
	Agent        string        // this agent's name, unique in the crawl
	Bind         string        // IP:PORT of the agent; the exchange listens on PORT+1
	Coordinators string        // NAME@IP:PORT,...: the agents that run the crawl's etcd
	Endpoints    []string      // an external etcd cluster's client URLs (instead of Coordinators)
	KeyFile      string        // the crawl's key (petrel cluster keygen)
	Wait         int           // members needed before anything is fetched
	ExchangePort int           // 0: the agent's port + 1
	LeaveTimeout time.Duration // a stopping agent's time to deliver its outbox
	CrawlName    string        // names the crawl's keys in etcd
	Lease        time.Duration // the agent's etcd lease TTL
	BatchDelay   time.Duration // longest wait of a record for its batch
	Grace        time.Duration // wait after a member's lease expired before its keys move (0: the bound)
}

// ParsedCoordinators returns --coordinators parsed (nil when unset).
func (s *Settings) ParsedCoordinators() []coord.Coordinator {
	cs, _ := coord.ParseCoordinators(s.Coordinators)
	if s.Coordinators == "" {
		return nil
	}
	return cs
}

// Enabled reports whether the crawl is one agent of several.
func (s *Settings) Enabled() bool { return s.Bind != "" }

// Table declares the cluster's settings.
func (s *Settings) Table() settings.Table {
	const atStart = "read once at the start"
	return settings.Table{
		settings.String(&s.Agent, "agent", "", "this agent's name, unique in the crawl (letters, digits, '.', '-', '_')").
			WithUnit("NAME").In(settings.Cluster).SetFixed("it names the agent's keys and files").
			Check(func() error {
				if s.Bind != "" && !ValidName(s.Agent) {
					return fmt.Errorf("a cluster agent needs a name of 1 to 64 letters, digits, '.', '-' or '_', not %q", s.Agent)
				}
				return nil
			}),
		settings.String(&s.Bind, "cluster-bind", "", "IP:PORT of this agent in a crawl of several; the exchange of URLs listens on PORT+1 (unset: a crawl of one agent)").
			WithUnit("IP:PORT").In(settings.Cluster).SetFixed(atStart).
			Check(func() error {
				if s.Bind == "" {
					return nil
				}
				if _, err := netip.ParseAddrPort(s.Bind); err != nil {
					return fmt.Errorf("want IP:PORT, not %q", s.Bind)
				}
				if s.KeyFile == "" {
					return fmt.Errorf("needs --cluster-key-file (make one with petrel cluster keygen FILE)")
				}
				if s.Coordinators == "" && len(s.Endpoints) == 0 {
					return fmt.Errorf("needs --coordinators (agents that run the crawl's etcd) or --etcd-endpoints (an external etcd)")
				}
				return nil
			}),
		settings.String(&s.Coordinators, "coordinators", "", "the agents that run the crawl's etcd, embedded (1, 3 or 5: a majority must be up for any agent to fetch), as NAME@IP:PORT with etcd's client port (its peer port is PORT+1); the same on every agent").
			WithUnit("NAME@IP:PORT,...").In(settings.Cluster).SetFixed(atStart).
			Check(func() error {
				if s.Coordinators == "" {
					return nil
				}
				if len(s.Endpoints) > 0 {
					return fmt.Errorf("give --coordinators or --etcd-endpoints, not both")
				}
				_, err := coord.ParseCoordinators(s.Coordinators)
				return err
			}),
		settings.List(&s.Endpoints, "etcd-endpoints", nil, "client URLs of an external etcd cluster for the crawl's coordination (instead of --coordinators); its TLS certificates made by petrel cluster etcd-certs from the crawl's key").
			WithUnit("https://IP:PORT,...").In(settings.Cluster).SetFixed(atStart).
			Check(func() error {
				for _, e := range s.Endpoints {
					if !strings.HasPrefix(e, "https://") {
						return fmt.Errorf("want https://IP:PORT (etcd's traffic is mutual TLS), not %q", e)
					}
				}
				return nil
			}),
		settings.String(&s.KeyFile, "cluster-key-file", "", "the crawl's shared key (petrel cluster keygen FILE); the same file on every agent").
			WithUnit("FILE").In(settings.Cluster).SetFixed(atStart),
		settings.Count(&s.Wait, "cluster-wait", 1, "fetch nothing, and never decide the crawl is over, until this many agents are members").
			In(settings.Cluster).Range(1, 100000).SetFixed("the view is formed once"),
		settings.Count(&s.ExchangePort, "exchange-port", 0, "port of the URL exchange on the --cluster-bind address (0: the agent's port + 1)").
			In(settings.Cluster).Range(0, 65535).SetFixed(atStart),
		settings.Duration(&s.LeaveTimeout, "leave-timeout", 60*time.Second, "a leave (SIGTERM or SIGINT to one agent of a crawl of several): time to hand everything over, past which the agent saves its state and exits 1; at a whole-crawl stop, time given to deliver the URLs still in the outbox (the rest waits for the next start)").
			In(settings.Cluster).AtLeast(time.Duration(0)).SetFixed(atStart),
		settings.String(&s.CrawlName, "cluster-name", "petrel", "the crawl's name: its keys in etcd are under /petrel/NAME/ (crawls may share an etcd)").
			WithUnit("NAME").In(settings.Cluster).SetFixed(atStart),
		settings.Duration(&s.Lease, "cluster-lease", 10*time.Second, "TTL of each agent's etcd lease, in whole seconds: an agent cut off from the coordinators starts no request once it is not sure its lease is live (the TTL less a tenth after its last acknowledged keep-alive), and its keys move --cluster-grace after the lease expired").
			In(settings.Cluster).Range(2*time.Second, 5*time.Minute).SetFixed(atStart),
		settings.Duration(&s.BatchDelay, "cluster-batch-delay", 200*time.Millisecond, "longest wait of a URL for its batch to another agent").
			In(settings.Cluster).Range(time.Millisecond, time.Minute).SetFixed(atStart),
		settings.Duration(&s.Grace, "cluster-grace", 0, "how long after an agent's lease expired in etcd the others wait before taking over its keys (0 = the smallest safe value: --fetch-timeout + the largest delay, 60s with the defaults; a smaller value is refused)").
			In(settings.Cluster).AtLeast(time.Duration(0)).SetFixed(atStart),
	}
}
