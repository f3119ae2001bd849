package cluster

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/petrel-crawler/petrel/internal/settings"
)

// Settings make a crawl one agent of a crawl of several. With Bind empty
// the crawl is a single agent and nothing here is used.
type Settings struct {
	Agent        string        // this agent's name, unique in the crawl
	Bind         string        // IP:PORT of the membership; the exchange listens on PORT+1
	Join         []string      // membership addresses of agents of the crawl
	KeyFile      string        // the crawl's key (petrel cluster keygen)
	Wait         int           // members needed before anything is fetched
	ExchangePort int           // 0: the membership port + 1
	LeaveTimeout time.Duration // a stopping agent's time to deliver its outbox
	CrawlName    string        // names the crawl in every gossip packet
	Probe        time.Duration // failure detector's probe interval
	BatchDelay   time.Duration // longest wait of a record for its batch
	Grace        time.Duration // G: wait after a member is declared dead before its keys are taken over (0: the bound, see GraceBound)
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
		settings.String(&s.Bind, "cluster-bind", "", "IP:PORT this agent's membership (gossip) listens on; the exchange listens on PORT+1 (unset: a crawl of one agent)").
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
				return nil
			}),
		settings.List(&s.Join, "join", nil, "membership addresses of agents of the crawl to join").
			WithUnit("IP:PORT,...").In(settings.Cluster).SetFixed(atStart).
			Check(func() error {
				for _, j := range s.Join {
					if _, err := netip.ParseAddrPort(j); err != nil {
						return fmt.Errorf("want IP:PORT, not %q", j)
					}
				}
				return nil
			}),
		settings.String(&s.KeyFile, "cluster-key-file", "", "the crawl's shared key (petrel cluster keygen FILE); the same file on every agent").
			WithUnit("FILE").In(settings.Cluster).SetFixed(atStart),
		settings.Count(&s.Wait, "cluster-wait", 1, "fetch nothing, and never decide the crawl is over, until this many agents are members").
			In(settings.Cluster).Range(1, 100000).SetFixed("the view is formed once"),
		settings.Count(&s.ExchangePort, "exchange-port", 0, "port of the URL exchange on the --cluster-bind address (0: membership port + 1)").
			In(settings.Cluster).Range(0, 65535).SetFixed(atStart),
		settings.Duration(&s.LeaveTimeout, "leave-timeout", 60*time.Second, "a leave (SIGTERM or SIGINT to one agent of a crawl of several): time to hand everything over, past which the agent saves its state and exits 1; at a whole-crawl stop, time given to deliver the URLs still in the outbox (the rest waits for the next start)").
			In(settings.Cluster).AtLeast(time.Duration(0)).SetFixed(atStart),
		settings.String(&s.CrawlName, "cluster-name", "petrel", "the crawl's name, carried by every gossip packet (agents of other crawls are not heard)").
			WithUnit("NAME").In(settings.Cluster).SetFixed(atStart),
		settings.Duration(&s.Probe, "cluster-probe", time.Second, "failure detector's probe interval; suspicion, gossip and push-pull timings follow from it").
			In(settings.Cluster).Range(10*time.Millisecond, time.Minute).SetFixed(atStart),
		settings.Duration(&s.BatchDelay, "cluster-batch-delay", 200*time.Millisecond, "longest wait of a URL for its batch to another agent").
			In(settings.Cluster).Range(time.Millisecond, time.Minute).SetFixed(atStart),
		settings.Duration(&s.Grace, "cluster-grace", 0, "grace period G: how long after an agent is declared dead the others wait before taking over its keys; an agent that completed no gossip round for G/2 fetches nothing (0 = the smallest safe value: longest suspicion + --fetch-timeout + largest delay, 85.5s with the defaults and fewer than 9 agents)").
			WithDoc("grace period G: how long after an agent is declared dead the others wait before taking over its keys; an agent that completed no gossip round for G/2 fetches nothing. 0 = the smallest safe value (GraceBound: memberlist's longest suspicion + `--fetch-timeout` + the largest of the delays), 85.5 s with the defaults and fewer than 9 agents; a smaller value is refused").
			In(settings.Cluster).AtLeast(time.Duration(0)).SetFixed(atStart),
	}
}
