package coord

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// The keys of one crawl, all under Prefix(crawl) ("/petrel/NAME/"):
//
//	identity       Identity: the settings every agent must hold alike (put once)
//	settings       Settings: the cluster-wide live settings and the blocklist
//	agents/NAME    AgentRecord, under the agent's lease: it is alive while the key is;
//	               written at registration and when its leave changes, never with figures
//	election/…     concurrency.Election: the one writer of views
//	view           ViewRecord, written by the elected agent only; its revision is the epoch
//	forget/NAME    a request to drop an absent agent from the view (cluster forget)
//	~figures/NAME  Figures, under the agent's lease, published every few seconds
//	~last/NAME     the record and figures an agent kept last, without a lease (what a forget gives up)
//	stop           a whole-crawl stop (cluster stop): its value is the reason
//	end            the end of the crawl, written by the elected agent
//
// Values are JSON and small; no URL goes through etcd. The keys that
// change every few seconds per agent start with "~", which sorts after
// every other key: an agent watches the range below them (AgentKeysEnd)
// and so receives the events of views, settings, stop, end and
// membership only, whatever the number of agents; the writer of views
// and status read everything.

// Prefix returns the key prefix of the crawl named crawl.
func Prefix(crawl string) string { return "/petrel/" + crawl + "/" }

// Identity is what every agent of a crawl must hold alike: the first
// agent writes it, each later one compares its own with it.
type Identity struct {
	Settings [][2]string `json:"settings"` // name, value
}

// FirstDifference names the first setting in which a and b differ, or "".
func (a Identity) FirstDifference(b Identity) string {
	am, bm := map[string]string{}, map[string]string{}
	var names []string
	for _, s := range a.Settings {
		am[s[0]] = s[1]
		names = append(names, s[0])
	}
	for _, s := range b.Settings {
		bm[s[0]] = s[1]
		names = append(names, s[0])
	}
	slices.Sort(names)
	for _, n := range slices.Compact(names) {
		if am[n] != bm[n] {
			return "--" + n + " " + quoteOrNone(bm[n]) + " here, " + quoteOrNone(am[n]) + " in the crawl"
		}
	}
	return ""
}

func quoteOrNone(s string) string {
	if s == "" {
		return "(unset)"
	}
	return `"` + s + `"`
}

// Settings are the cluster-wide values changed while the crawl runs
// (the live settings and the blocklist, by names of the agents'
// choosing), as one key: Rev is the revision of its last write (0:
// never changed).
type Settings struct {
	Values map[string]any `json:"values"`
	Rev    int64          `json:"-"`
}

// AgentRecord is what an agent publishes under its lease.
type AgentRecord struct {
	Name     string  `json:"name"`
	Exchange string  `json:"exchange"` // the exchange's address
	Weight   uint32  `json:"weight"`
	Leaving  bool    `json:"leaving,omitempty"` // asks for a view without it
	Done     bool    `json:"done,omitempty"`    // its leave is over: everything handed over
	Figures  Figures `json:"figures,omitzero"`  // in State: from ~figures/NAME; in ~last/NAME: kept with the record
}

// Figures are an agent's counts, published when they change. The end of
// the crawl is decided from them.
type Figures struct {
	Idle     bool   `json:"idle"`     // nothing queued, in flight, parsed, in the outbox or unapplied
	Sent     uint64 `json:"sent"`     // batches acknowledged by their receivers
	Applied  uint64 `json:"applied"`  // batches received and applied
	Activity uint64 `json:"activity"` // grows at every batch made or applied
	Fetched  int64  `json:"fetched"`
	Queued   int64  `json:"queued"`
	Outbox   int64  `json:"outbox"` // URLs in the outbox's batches
	Inbox    int64  `json:"inbox"`  // bytes received, not applied

	OutboxBatches int       `json:"outbox_batches"`
	OutboxBytes   int64     `json:"outbox_bytes"`
	Time          time.Time `json:"time"`  // when the figures were taken
	Epoch         int64     `json:"epoch"` // the view the agent acts on
	Wave          int64     `json:"wave"`  // the end's wave these figures answer (State.Probe)
}

// ViewMember is one owner of a view.
type ViewMember struct {
	Name     string `json:"name"`
	Weight   uint32 `json:"weight"`
	Exchange string `json:"exchange"`
}

// ViewRecord is the ownership view as stored. Members are sorted by name.
// Absent names agents taken out by a death and not forgotten: they own
// nothing but may hold work only they have, so the crawl does not end
// while one is listed.
type ViewRecord struct {
	Members []ViewMember `json:"members"`
	Absent  []string     `json:"absent,omitempty"`
}

// Has reports whether name is a member.
func (v ViewRecord) Has(name string) bool {
	_, ok := slices.BinarySearchFunc(v.Members, name, func(m ViewMember, n string) int { return strings.Compare(m.Name, n) })
	return ok
}

// Equal reports whether v and w list the same members and absentees.
func (v ViewRecord) Equal(w ViewRecord) bool {
	return slices.Equal(v.Members, w.Members) && slices.Equal(v.Absent, w.Absent)
}

func (v *ViewRecord) normalize() {
	slices.SortFunc(v.Members, func(a, b ViewMember) int { return strings.Compare(a.Name, b.Name) })
	slices.Sort(v.Absent)
	v.Absent = slices.Compact(v.Absent)
}

// View is a view as read back from etcd: Rev is the revision of its
// write, the view's epoch. Rev 0 means no view yet.
type View struct {
	ViewRecord
	Rev int64
}

func decode[T any](b []byte) (T, error) {
	var v T
	err := json.Unmarshal(b, &v)
	return v, err
}

// GivenUp says what a forget gives up of an agent whose last kept record
// is r (ok false: none was kept), and its count of URLs (-1: unknown):
// those queued in its frontier and those in its outbox's batches. Its
// unapplied inbox is known in bytes only.
func GivenUp(r AgentRecord, ok bool) (string, int64) {
	if !ok {
		return "its figures are unknown (it kept none)", -1
	}
	f := r.Figures
	note := ""
	if r.Leaving {
		note = ", during its leave"
	}
	return fmt.Sprintf("%d URLs (at its last status (%s%s) it had %d URLs queued and %d URLs in %d batches (%d bytes) in its outbox) and %d bytes of inbox unapplied",
		f.Queued+f.Outbox, f.Time.UTC().Format(time.RFC3339), note, f.Queued, f.Outbox, f.OutboxBatches, f.OutboxBytes, f.Inbox), f.Queued + f.Outbox
}
