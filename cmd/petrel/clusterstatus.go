package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/petrel-crawler/petrel/internal/cluster"
)

func clusterStatusCmd() *cobra.Command {
	var cf controlFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status --join IP:PORT --cluster-key-file FILE [--json]",
		Short: "Show a running crawl's members, view and totals (over the authenticated exchange; never joins the gossip)",
		Long: `Show a running crawl's members, its ownership view and its totals. The first
agent of --join that answers lists the members as its memberlist sees them
(alive, suspect, dead, left) and when it last heard from each (by gossip or
the exchange); every alive or suspect member is then asked for its own
figures. KEYS is the member's count of the view's ` + fmt.Sprint(cluster.Slots) + ` slots: a
politeness key's group belongs to the owner of its slot, so a member's
share of the slots is its share of the keys. --json prints the same as
JSON (docs/cluster.md lists its keys).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cf.each(cmd.Context(), 10*time.Second, func(ctx context.Context, cl *cluster.Client, addr string) error {
				first, err := cl.GetStatus(ctx, addr)
				if err != nil {
					return err
				}
				if err := showStatus(ctx, cmd.OutOrStdout(), cl, first, asJSON); err != nil {
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

// statusReport is what petrel cluster status prints; its JSON keys are
// listed in docs/cluster.md.
type statusReport struct {
	AnsweredBy  string            `json:"answered_by"` // the agent of --join that answered
	Time        time.Time         `json:"time"`        // of its answer
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
	Name      string     `json:"name"`
	Address   string     `json:"address"` // membership (gossip) address
	Exchange  string     `json:"exchange,omitempty"`
	State     string     `json:"state"` // alive, suspect, dead, left as the answering agent's memberlist sees it; "unknown" for a view agent it does not know
	InView    bool       `json:"in_view"`
	Epoch     uint64     `json:"epoch"`      // of the member's view: its answer, else its gossip
	KeysOwned int        `json:"keys_owned"` // slots of the view it owns
	KeyShare  float64    `json:"key_share"`  // keys_owned / slots
	LastHeard *time.Time `json:"last_heard,omitempty"`
	Answered  bool       `json:"answered"`
	Error     string     `json:"error,omitempty"` // why it was not asked or did not answer

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

// showStatus asks every other alive or suspect member that first lists
// for its status and prints the report.
func showStatus(ctx context.Context, out io.Writer, cl *cluster.Client, first *cluster.Status, asJSON bool) error {
	answers := map[string]*cluster.Status{first.Name: first}
	errs := map[string]string{}
	for _, m := range first.Members {
		switch {
		case m.Name == first.Name:
		case m.State != "alive" && m.State != "suspect":
			errs[m.Name] = m.State
		case m.Meta.Exchange == "":
			errs[m.Name] = "no exchange address announced"
		default:
			s, err := cl.GetStatus(ctx, m.Meta.Exchange)
			if err != nil {
				errs[m.Name] = err.Error()
				continue
			}
			answers[m.Name] = s
		}
	}
	r := buildReport(first, answers, errs)
	if asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	printReport(out, r)
	return nil
}

// buildReport makes the report from the first answer's members and view,
// the answers (by name, first's among them) and why the others are missing.
func buildReport(first *cluster.Status, answers map[string]*cluster.Status, errs map[string]string) *statusReport {
	r := &statusReport{AnsweredBy: first.Name, Time: first.Time, View: first.View, Slots: cluster.Slots,
		Agents: []*cluster.Status{first}, Unreachable: []string{}}
	var owned map[string]int
	if first.View != nil {
		owned = first.View.SlotsOwned()
	}
	rows := map[string]bool{}
	add := func(m cluster.Member) {
		rows[m.Name] = true
		ms := memberStatus{Name: m.Name, Address: m.Addr, Exchange: m.Meta.Exchange, State: m.State,
			Epoch: m.Meta.ViewEpoch, KeysOwned: owned[m.Name], KeyShare: float64(owned[m.Name]) / float64(cluster.Slots),
			Error: errs[m.Name]}
		ms.InView = first.View != nil && first.View.Has(m.Name)
		if !m.LastHeard.IsZero() {
			t := m.LastHeard
			ms.LastHeard = &t
		}
		if s := answers[m.Name]; s != nil {
			ms.answered(s)
			r.Totals.add(s)
			if s != first {
				r.Agents = append(r.Agents, s)
			}
		} else {
			r.Unreachable = append(r.Unreachable, m.Name+" ("+ms.Error+")")
		}
		r.Members = append(r.Members, ms)
	}
	for _, m := range first.Members {
		add(m)
	}
	if first.View != nil {
		for _, a := range first.View.Agents {
			switch {
			case rows[a.Name]:
			case a.Name == first.Name: // its gossip does not list itself yet
				add(cluster.Member{Name: a.Name, State: "alive", Meta: cluster.Meta{Exchange: first.Exchange}})
			default:
				errs[a.Name] = "not a member known to " + first.Name
				add(cluster.Member{Name: a.Name, State: "unknown"})
			}
		}
	}
	r.Totals.Members = len(r.Members)
	r.Totals.Finished = first.Finished
	return r
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
	fmt.Fprintf(out, "members as %s sees them at %s:\n", r.AnsweredBy, r.Time.Format(time.RFC3339))
	tw := tabwriter.NewWriter(out, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "AGENT\tADDRESS\tSTATE\tEPOCH\tKEYS\tFETCHED\tQUEUED\tOUTBOX\tINBOX\tSENT\tRECEIVED\tFORWARDED\tHEARD")
	for _, m := range r.Members {
		keys := "-"
		if m.InView {
			keys = fmt.Sprintf("%d (%.1f%%)", m.KeysOwned, 100*m.KeyShare)
		}
		addr := m.Address
		if addr == "" {
			addr = "-"
		}
		heard := "never"
		if m.LastHeard != nil {
			heard = r.Time.Sub(*m.LastHeard).Round(time.Millisecond).String() + " ago"
		}
		if !m.Answered {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t-\t-\t-\t-\t-\t-\t-\t%s\n", m.Name, addr, m.State, m.Epoch, keys, heard)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\n", m.Name, addr, m.State, m.Epoch, keys,
			m.Fetched, m.Queued, m.OutboxURLs, m.InboxUnapplied, m.SentURLs, m.ReceivedURLs, m.ForwardedURLs, heard)
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
