package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/petrel-crawler/petrel/internal/cluster"
	"github.com/petrel-crawler/petrel/internal/coord"
)

func clusterStatusCmd() *cobra.Command {
	var cf controlFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status --coordinators NAME@IP:PORT,... --cluster-key-file FILE [--json]",
		Short: "Show a running crawl's leader, members, view and totals (read from its etcd)",
		Long: `Show a running crawl's leader (the agent that writes views), its members,
its ownership view and its totals, read from the crawl's etcd: each agent
is alive (its lease live, in the view), joining (alive, not in the view
yet), leaving, dead (in the view, its lease expired: its keys move
--cluster-grace later) or absent (taken out by a death, may come back).
An agent refused by the crawl never becomes a member and is not listed.
Every alive agent is then asked, over the exchange, for its own figures.
KEYS is the member's count of the view's ` + fmt.Sprint(cluster.Slots) + ` slots: a politeness key's
group belongs to the owner of its slot, so a member's share of the slots
is its share of the keys. --json prints the same as JSON (docs/cluster.md
lists its keys).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			crawl, closeCrawl, ctx, cancel, err := cf.open(cmd.Context(), 10*time.Second)
			if err != nil {
				return err
			}
			defer cancel()
			defer closeCrawl()
			st, err := crawl.Read(ctx)
			if err != nil {
				return fmt.Errorf("cluster status: %w", err)
			}
			leader, _ := crawl.Leader(ctx)
			k, _ := cluster.ReadKeyFile(cf.keyFile)
			cl, err := cluster.NewClient(k)
			if err != nil {
				return err
			}
			defer cl.Close()
			r := buildReport(st, leader, func(addr string) (*cluster.Status, error) { return cl.GetStatus(ctx, addr) })
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(r)
			}
			printReport(cmd.OutOrStdout(), r)
			return nil
		},
	}
	cf.bind(cmd.Flags())
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// statusReport is what petrel cluster status prints; its JSON keys are
// listed in docs/cluster.md.
type statusReport struct {
	Leader      string            `json:"leader"` // the agent elected to write views
	Time        time.Time         `json:"time"`   // of the read
	Revision    int64             `json:"revision"`
	Finished    bool              `json:"finished"`
	Stopping    bool              `json:"stopping"`
	View        *cluster.View     `json:"view"`
	Slots       int               `json:"slots"` // the view's slots: keys_owned sums to it
	Members     []memberStatus    `json:"members"`
	Totals      statusTotals      `json:"totals"`
	Agents      []*cluster.Status `json:"agents"`      // each answering agent's own status
	Unreachable []string          `json:"unreachable"` // "name (state or error)" of the members not asked or not answering
}

// memberStatus is one member: what the answering agent knows of it, and
// what it answered itself (Answered).
type memberStatus struct {
	Name      string  `json:"name"`
	Exchange  string  `json:"exchange,omitempty"`
	State     string  `json:"state"` // alive, joining, leaving, dead, absent
	InView    bool    `json:"in_view"`
	Epoch     uint64  `json:"epoch"`      // of the member's view: its answer, else its record
	KeysOwned int     `json:"keys_owned"` // slots of the view it owns
	KeyShare  float64 `json:"key_share"`  // keys_owned / slots
	Answered  bool    `json:"answered"`
	Error     string  `json:"error,omitempty"` // why it was not asked or did not answer

	Fetched        int64  `json:"fetched"`
	Queued         int64  `json:"queued"`
	OutboxBatches  int    `json:"outbox_batches"`
	OutboxURLs     int64  `json:"outbox_urls"`
	InboxUnapplied int64  `json:"inbox_unapplied_bytes"`
	SentURLs       uint64 `json:"sent_urls"`
	ReceivedURLs   uint64 `json:"received_urls"`
	ForwardedURLs  int64  `json:"forwarded_urls"`
}

// statusTotals sums the members that answered.
type statusTotals struct {
	Members        int    `json:"members"`
	Answered       int    `json:"answered"`
	Fetched        int64  `json:"fetched"`
	Queued         int64  `json:"queued"`
	OutboxURLs     int64  `json:"outbox_urls"`
	InboxUnapplied int64  `json:"inbox_unapplied_bytes"`
	SentURLs       uint64 `json:"sent_urls"`
	ReceivedURLs   uint64 `json:"received_urls"`
	ForwardedURLs  int64  `json:"forwarded_urls"`
	Finished       bool   `json:"finished"`
}

// buildReport makes the report from the crawl's state in etcd, asking
// every alive agent for its own figures (ask: over the exchange).
func buildReport(st coord.State, leader string, ask func(exchange string) (*cluster.Status, error)) *statusReport {
	r := &statusReport{Leader: leader, Time: time.Now().UTC(), Revision: st.Rev, Finished: st.Ended, Stopping: st.Stopped,
		Slots: cluster.Slots, Agents: []*cluster.Status{}, Unreachable: []string{}}
	var owned map[string]int
	if st.View.Rev > 0 {
		r.View = cluster.ViewOf(st.View)
		owned = r.View.SlotsOwned()
	}
	for _, name := range memberNames(st) {
		rec, alive := st.Agents[name]
		ms := memberStatus{Name: name, Exchange: rec.Exchange, State: memberState(st, name),
			Epoch: uint64(rec.Figures.Epoch), KeysOwned: owned[name], KeyShare: float64(owned[name]) / float64(cluster.Slots)}
		ms.InView = st.View.Has(name)
		if !alive {
			ms.Error = ms.State
			r.Unreachable = append(r.Unreachable, name+" ("+ms.State+")")
		} else if s, err := ask(rec.Exchange); err != nil {
			ms.Error = err.Error()
			r.Unreachable = append(r.Unreachable, name+" ("+err.Error()+")")
		} else {
			ms.answered(s)
			r.Totals.add(s)
			r.Agents = append(r.Agents, s)
		}
		r.Members = append(r.Members, ms)
	}
	r.Totals.Members = len(r.Members)
	r.Totals.Finished = st.Ended
	return r
}

// memberNames lists the view's members and absentees and the live agents,
// sorted, once each.
func memberNames(st coord.State) []string {
	var names []string
	for _, m := range st.View.Members {
		names = append(names, m.Name)
	}
	names = append(names, st.View.Absent...)
	for name := range st.Agents {
		names = append(names, name)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// memberState is an agent's state as the crawl's etcd says it.
func memberState(st coord.State, name string) string {
	rec, alive := st.Agents[name]
	switch {
	case alive && rec.Leaving:
		return "leaving"
	case alive && st.View.Has(name):
		return "alive"
	case alive:
		return "joining"
	case slices.Contains(st.View.Absent, name):
		return "absent"
	default:
		return "dead"
	}
}

// answered fills in a member's own figures.
func (ms *memberStatus) answered(s *cluster.Status) {
	ms.Answered, ms.Error = true, ""
	ms.Epoch = s.ViewEpoch
	ms.Fetched, ms.Queued, ms.ForwardedURLs = s.Fetched, s.Queued, s.Forwarded
	ms.OutboxBatches, ms.OutboxURLs, ms.InboxUnapplied = s.OutboxBatches, s.OutboxURLs, s.InboxUnapplied
	ms.SentURLs, ms.ReceivedURLs = s.SentURLs, s.AppliedURLs
}

func (t *statusTotals) add(s *cluster.Status) {
	t.Answered++
	t.Fetched += s.Fetched
	t.Queued += s.Queued
	t.OutboxURLs += s.OutboxURLs
	t.InboxUnapplied += s.InboxUnapplied
	t.SentURLs += s.SentURLs
	t.ReceivedURLs += s.AppliedURLs
	t.ForwardedURLs += s.Forwarded
}

func printReport(out io.Writer, r *statusReport) {
	if r.View != nil {
		fmt.Fprintln(out, "view:", r.View.String())
	} else {
		fmt.Fprintln(out, "view: none yet")
	}
	leader := r.Leader
	if leader == "" {
		leader = "none"
	}
	fmt.Fprintf(out, "leader (writes views): %s; read at revision %d, %s; stopping %v\n", leader, r.Revision, r.Time.Format(time.RFC3339), r.Stopping)
	tw := tabwriter.NewWriter(out, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "AGENT\tEXCHANGE\tSTATE\tEPOCH\tKEYS\tFETCHED\tQUEUED\tOUTBOX\tINBOX\tSENT\tRECEIVED\tFORWARDED")
	for _, m := range r.Members {
		keys := "-"
		if m.InView {
			keys = fmt.Sprintf("%d (%.1f%%)", m.KeysOwned, 100*m.KeyShare)
		}
		addr := m.Exchange
		if addr == "" {
			addr = "-"
		}
		if !m.Answered {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t-\t-\t-\t-\t-\t-\t-\n", m.Name, addr, m.State, m.Epoch, keys)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\n", m.Name, addr, m.State, m.Epoch, keys,
			m.Fetched, m.Queued, m.OutboxURLs, m.InboxUnapplied, m.SentURLs, m.ReceivedURLs, m.ForwardedURLs)
	}
	tw.Flush()
	for _, u := range r.Unreachable {
		fmt.Fprintln(out, "not answering:", u)
	}
	t := r.Totals
	fmt.Fprintf(out, "total: %d of %d members answered; %d pages fetched, %d URLs queued, %d in outboxes; URLs sent %d, received %d, forwarded %d; finished %v\n",
		t.Answered, t.Members, t.Fetched, t.Queued, t.OutboxURLs, t.SentURLs, t.ReceivedURLs, t.ForwardedURLs, t.Finished)
	fmt.Fprintln(out, "OUTBOX: URLs not yet acknowledged; INBOX: bytes received, not yet applied; KEYS: slots of the view owned")
}
