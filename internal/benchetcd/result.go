package benchetcd

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// Result is what one run measured. Rates are per second of the window;
// CPU shares are of one core.
type Result struct {
	Date         string    `json:"date"`
	Agents       int       `json:"agents"`
	Seconds      float64   `json:"seconds"`
	PublishEvery string    `json:"publish_every"`
	ViewEvery    string    `json:"view_every"`
	TTL          string    `json:"ttl"`
	Watch        string    `json:"watch"`
	LoadAverage  [2]string `json:"load_average"` // /proc/loadavg at the window's start and end

	Issued               Counts  `json:"issued"`                  // requests the agents issued in the window
	WritesPerSecond      float64 `json:"writes_per_second"`       // puts, deletes, transactions, lease grants and revocations issued
	KeepAlivesPerSecond  float64 `json:"keep_alives_per_second"`  // the agents' own keep-alives (not the writer's session stream)
	RevisionsPerSecond   float64 `json:"revisions_per_second"`    // etcd's revision growth: the writes that changed a key
	RaftEntriesPerSecond float64 `json:"raft_entries_per_second"` // etcd's raft index growth: every write, lease ones included

	CoordinatorMeasured bool    `json:"coordinator_measured"` // false when the coordinator runs in this process
	CoordinatorCPU      float64 `json:"coordinator_cpu"`      // the coordinator process's user+system CPU over the window
	CoordinatorRSS      int64   `json:"coordinator_rss_bytes"`
	CoordinatorPeakRSS  int64   `json:"coordinator_peak_rss_bytes"` // VmHWM: over the process's life
	CoordinatorWait     float64 `json:"coordinator_cpu_wait"`       // its threads' time waiting for a CPU, per second: what the machine's other work took
	AgentsCPU           float64 `json:"agents_cpu"`                 // this process's (every simulated agent's) CPU over the window
	AgentsWait          float64 `json:"agents_cpu_wait"`            // this process's threads' time waiting for a CPU, per second
	DBSize              int64   `json:"db_size_bytes"`
	DBSizeInUse         int64   `json:"db_size_in_use_bytes"`

	Publish Latency `json:"publish"`
	Views   Views   `json:"views"`

	LeasesLost   int       `json:"leases_lost"`
	LeasesLostAt []float64 `json:"leases_lost_at,omitempty"` // seconds from the window's start
	Errors       []string  `json:"errors,omitempty"`
}

// Latency is a distribution of request times, in milliseconds.
type Latency struct {
	Count  int     `json:"count"`
	Errors int     `json:"errors"`
	P50    float64 `json:"p50_ms"`
	P99    float64 `json:"p99_ms"`
	Max    float64 `json:"max_ms"`
}

// Views are the view changes of the window: each written view's reads by
// every agent, timed from the start of its write's commit.
type Views struct {
	LeavesAsked int       `json:"leaves_asked"`
	Returns     int       `json:"returns"` // leaves and returns completed
	Written     int       `json:"written"`
	Unchanged   int       `json:"unchanged"`  // written with the members and absentees of the view before
	Reads       Latency   `json:"reads"`      // one per view and agent
	AllRead     Latency   `json:"all_read"`   // one per view: until the last agent read it
	Missed      int       `json:"missed"`     // reads that never came (within the grace)
	WrittenAt   []float64 `json:"written_at"` // seconds from the window's start, in order
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// latency summarizes ds (sorted in place).
func latency(ds []time.Duration) Latency {
	if len(ds) == 0 {
		return Latency{}
	}
	slices.Sort(ds)
	at := func(q float64) time.Duration { return ds[min(len(ds)-1, int(q*float64(len(ds))))] }
	return Latency{Count: len(ds), P50: ms(at(0.50)), P99: ms(at(0.99)), Max: ms(ds[len(ds)-1])}
}

// result makes the Result of a run from its window and agents.
func (r *run) result(w window, agents []*agent) Result {
	secs := w.end.Sub(w.start).Seconds()
	issued := w.c1.minus(w.c0)
	res := Result{
		Date: w.start.UTC().Format(time.RFC3339), Agents: r.o.Agents, Seconds: secs,
		PublishEvery: r.o.PublishEvery.String(), ViewEvery: r.o.ViewEvery.String(), TTL: r.o.TTL.String(), Watch: r.o.Watch,
		LoadAverage: [2]string{w.load0, w.load1}, Issued: issued,
		WritesPerSecond:      float64(issued.Writes()) / secs,
		KeepAlivesPerSecond:  float64(issued.KeepAlives) / secs,
		RevisionsPerSecond:   float64(w.st1.Header.Revision-w.st0.Header.Revision) / secs,
		RaftEntriesPerSecond: float64(w.st1.RaftIndex-w.st0.RaftIndex) / secs,
		CoordinatorMeasured:  r.t.PID != 0,
		CoordinatorCPU:       (w.cpu1 - w.cpu0).Seconds() / secs,
		CoordinatorRSS:       w.rss, CoordinatorPeakRSS: w.peak,
		CoordinatorWait: (w.wait1 - w.wait0).Seconds() / secs,
		AgentsCPU:       (w.self1 - w.self0).Seconds() / secs, AgentsWait: (w.swait1 - w.swait0).Seconds() / secs,
		DBSize: w.st1.DbSize, DBSizeInUse: w.st1.DbSizeInUse,
	}
	var pubs []time.Duration
	for _, a := range agents {
		a.mu.Lock()
		for _, s := range a.pubs {
			if !s.at.Before(w.start) && s.at.Before(w.end) {
				pubs = append(pubs, s.d)
			}
		}
		res.Publish.Errors += a.pubErrs
		res.LeasesLost += len(a.lost)
		for _, at := range a.lost {
			res.LeasesLostAt = append(res.LeasesLostAt, at.Sub(w.start).Seconds())
		}
		res.Views.Returns += a.cycles
		if a.cycleErr != nil {
			res.Errors = append(res.Errors, a.cycleErr.Error())
		}
		a.mu.Unlock()
	}
	res.Publish = Latency{Errors: res.Publish.Errors}.with(latency(pubs))
	res.Views.LeavesAsked = w.leavesAsked
	r.viewReads(&res.Views, w, agents)
	return res
}

func (l Latency) with(m Latency) Latency {
	m.Errors = l.Errors
	return m
}

// viewReads times every view written in the window to each agent's read.
func (r *run) viewReads(v *Views, w window, agents []*agent) {
	var reads, all []time.Duration
	views, same := r.views.between(w.start, w.end)
	v.Written, v.Unchanged = len(views), same
	for _, at := range views {
		v.WrittenAt = append(v.WrittenAt, at.Sub(w.start).Seconds())
	}
	slices.Sort(v.WrittenAt)
	for rev, at := range views {
		var last time.Duration
		complete := true
		for _, a := range agents {
			a.mu.Lock()
			i := slices.IndexFunc(a.seen, func(s seenView) bool { return s.rev >= rev })
			var d time.Duration
			if i >= 0 {
				d = a.seen[i].at.Sub(at)
			}
			a.mu.Unlock()
			if i < 0 {
				v.Missed++
				complete = false
				continue
			}
			reads = append(reads, d)
			last = max(last, d)
		}
		if complete {
			all = append(all, last)
		}
	}
	v.Reads, v.AllRead = latency(reads), latency(all)
}

// WriteTable writes res for a reader.
func (res Result) WriteTable(out io.Writer) error {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	row := func(k, format string, a ...any) { fmt.Fprintf(tw, "%s\t"+format+"\n", append([]any{k}, a...)...) }
	row("date", "%s (load average %s at the start, %s at the end)", res.Date, res.LoadAverage[0], res.LoadAverage[1])
	row("agents", "%d, publishing every %s ±20 %%, lease TTL %s, a leave and return every %s, watching the %s", res.Agents, res.PublishEvery, res.TTL, res.ViewEvery, res.Watch)
	row("window", "%.1f s", res.Seconds)
	row("writes issued", "%.1f/s (puts %d, txns %d, deletes %d, lease grants %d, revocations %d)", res.WritesPerSecond,
		res.Issued.Puts, res.Issued.Txns, res.Issued.Deletes, res.Issued.Grants, res.Issued.Revokes)
	row("etcd revisions", "%.1f/s", res.RevisionsPerSecond)
	row("etcd raft entries", "%.1f/s", res.RaftEntriesPerSecond)
	row("keep-alives", "%.1f/s", res.KeepAlivesPerSecond)
	row("reads issued", "%d", res.Issued.Gets)
	if res.CoordinatorMeasured {
		row("coordinator CPU", "%.1f %% of one core (its threads waited %.2f s/s for a CPU)", 100*res.CoordinatorCPU, res.CoordinatorWait)
		row("coordinator RSS", "%.1f MiB at the end, peak %.1f MiB", mib(res.CoordinatorRSS), mib(res.CoordinatorPeakRSS))
	} else {
		row("coordinator CPU, RSS", "not measured (the coordinator runs in this process)")
	}
	row("agents' CPU", "%.1f %% of one core (this process, all agents; its threads waited %.2f s/s for a CPU)", 100*res.AgentsCPU, res.AgentsWait)
	row("etcd db", "%.2f MiB (%.2f MiB in use)", mib(res.DBSize), mib(res.DBSizeInUse))
	row("Publish", "p50 %.1f ms, p99 %.1f ms, max %.1f ms (%d, %d failed)", res.Publish.P50, res.Publish.P99, res.Publish.Max, res.Publish.Count, res.Publish.Errors)
	v := res.Views
	row("views", "%d written, %d of them unchanged from the one before (%d leaves asked, %d returns completed)", v.Written, v.Unchanged, v.LeavesAsked, v.Returns)
	row("view to an agent", "p50 %.1f ms, p99 %.1f ms, max %.1f ms (%d reads, %d missed)", v.Reads.P50, v.Reads.P99, v.Reads.Max, v.Reads.Count, v.Missed)
	row("view to every agent", "p50 %.1f ms, max %.1f ms (%d views)", v.AllRead.P50, v.AllRead.Max, v.AllRead.Count)
	row("views written at", "%s s into the window", seconds(v.WrittenAt))
	if res.LeasesLost == 0 {
		row("leases lost", "0")
	} else {
		row("leases lost", "%d (at %s s into the window)", res.LeasesLost, seconds(res.LeasesLostAt))
	}
	for _, e := range res.Errors {
		row("error", "%s", e)
	}
	return tw.Flush()
}

func seconds(ts []float64) string {
	ts = slices.Sorted(slices.Values(ts))
	var parts []string
	for _, t := range ts {
		parts = append(parts, strconv.FormatFloat(t, 'f', 1, 64))
	}
	if len(parts) == 0 {
		return "–"
	}
	return strings.Join(parts, ", ")
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }
