package agent

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/petrel-crawler/petrel/internal/console"
	"github.com/petrel-crawler/petrel/internal/crawllog"
	"github.com/petrel-crawler/petrel/internal/diskq"
	"github.com/petrel-crawler/petrel/internal/frontier"
	"github.com/petrel-crawler/petrel/internal/robots"
	"github.com/petrel-crawler/petrel/internal/sieve"
	"github.com/petrel-crawler/petrel/internal/store"
	"github.com/petrel-crawler/petrel/internal/urlx"
)

// whyHere tells everything this agent knows about one URL: where the
// frontier holds it, what the WARC files and the logs say of it, what the
// sieve and the URL cache know, which rule would refuse it, and, in a
// revisit crawl, when it is due next and why (revisits.go). Agent.Why
// adds what the other agents of a cluster know (clusterwhy.go).
func (a *Agent) whyHere(ctx context.Context, raw string) (console.Why, error) {
	w, err := a.whyNow(ctx, raw)
	if err == nil {
		a.whyRevisit(&w)
	}
	return w, err
}

// whyNow is whyHere without the revisit schedule.
func (a *Agent) whyNow(ctx context.Context, raw string) (console.Why, error) {
	u, err := urlx.Parse(raw)
	if err != nil {
		return malformed(raw, err), nil
	}
	url := u.String()
	w := console.Why{URL: url, Source: "the running crawl"}
	place, err := a.frontier.Where(ctx, url)
	if err != nil {
		return w, notRunning(err)
	}
	robotsKnown, robotsAllow, robotsRule, err := a.frontier.RobotsRule(ctx, url)
	if err != nil {
		return w, notRunning(err)
	}
	ev, err := readEvidence(a.cfg.Dir, url, true)
	if err != nil {
		return w, err
	}
	if held(&w, place, a.frontier.Settings().MaxRetries) {
		if robotsKnown && !robotsAllow && place.Place != frontier.InFlight && place.Place != frontier.Parsing {
			// robots.txt is applied when a URL's turn comes: this one is
			// dropped then, not fetched.
			where := w.Detail
			refusedByRobots(&w, robotsRule, "the robots.txt the crawl holds for "+u.SchemeAuthority())
			w.Detail = "robots.txt disallows it: it is " + where + ", and is dropped, not fetched, when its turn comes"
		}
		ev.addFetched(&w, false)
		return w, nil
	}
	if ev.decide(&w, a.frontier.Settings().MaxRetries) {
		return w, nil
	}
	key := u.AppendString(frontier.Meta{}.Append(nil))
	found, buffered, pending, err := a.sieve.Contains(key)
	if err != nil {
		return w, err
	}
	if robotsKnown && !robotsAllow {
		refusedByRobots(&w, robotsRule, "the robots.txt the crawl holds for "+u.SchemeAuthority())
		w.Add("known to the sieve", found)
		return w, nil
	}
	switch {
	case buffered:
		w.State, w.Detail = console.WhyInSieve, "offered to the crawl; waiting in the sieve's buffer for its next flush"
		return w, nil
	case found:
		if !ev.skipped(&w) {
			a.knownNotHeld(ctx, &w, u)
		}
		return w, nil
	}
	if rule := a.rule(u, frontier.Meta{}); rule != "" {
		refusedByRule(&w, string(rule))
		return w, nil
	}
	if ev.skipped(&w) {
		return w, nil
	}
	if c, ok := a.frontier.Cache().(interface{ Holds(uint64) bool }); ok && c.Holds(sieve.Hash([]byte(url))) {
		w.State = console.WhyCacheOnly
		w.Detail = "the URL cache has seen it recently, but the sieve does not know it"
		w.Caveats = append(w.Caveats, "the URL cache keeps fingerprints only: it may be a fingerprint collision, or the URL was refused after the cache (over budget) without a trace")
		return w, nil
	}
	neverSeen(&w, pending)
	return w, nil
}

// neverSeen answers w for a URL no part of the running crawl knows;
// flushing says the sieve was flushing when it was asked. The sieve's
// buffer was searched: a URL waiting there is answered in-sieve, so only a
// flush under way (whose keys are in neither the buffer nor the store
// until it ends) makes the answer uncertain.
func neverSeen(w *console.Why, flushing bool) {
	w.State, w.Detail = console.WhyNeverSeen, "no part of the crawl knows this URL: it was never offered (no page fetched so far links to it), or it was refused by a rule that depends on how it was found"
	if flushing {
		w.Caveats = append(w.Caveats, "a sieve flush is under way: a URL offered just before it is in neither the sieve's buffer nor its store until the flush ends; ask again in a moment")
	}
	w.Caveats = append(w.Caveats, depthCaveat)
}

const depthCaveat = "the depth and redirect-chain limits depend on how a URL was found; a URL they refuse leaves no trace here unless logs/skipped.jsonl has it"

func malformed(raw string, err error) console.Why {
	return console.Why{URL: raw, State: console.WhyRefused, Rule: "malformed", Detail: "the crawl cannot hold this URL: " + err.Error()}
}

// held describes a URL the frontier holds; false when it holds none.
func held(w *console.Why, p frontier.URLInfo, maxRetries int) bool {
	switch p.Place {
	case frontier.NotHeld:
		return false
	case frontier.Queued, frontier.Virtualized:
		w.State = console.WhyQueued
		if p.Place == frontier.Virtualized {
			w.State = console.WhyVirtualized
		}
		if p.Attempt > 0 {
			w.State = console.WhyRetrying
			w.Add("failed attempts", p.Attempt)
			w.Add("retries left", max(maxRetries-p.Attempt, 0))
		}
		w.Detail = fmt.Sprintf("queued in the visit state of %s, %d of %d (0 is fetched next)", p.Key.Key, p.Position, p.Key.Queued)
		w.Add("position", p.Position)
	case frontier.InReady:
		w.State, w.Detail = console.WhyReady, "out of the sieve, in the ready queue: it goes to its visit state next"
	case frontier.InFlight:
		w.State, w.Detail = console.WhyInFlight, "a fetcher is fetching it now"
		w.Add("attempt", p.Attempt+1)
	case frontier.Parsing:
		w.State, w.Detail = console.WhyParsing, "fetched; its response is being stored and parsed"
	case frontier.Held:
		w.State, w.Detail = console.WhyReady, "out of the ready queue, waiting for room in the front of active visit states"
	case frontier.ParkedDNS:
		w.State, w.Detail = console.WhyReady, "out of the ready queue, waiting for its host's address (ip policy)"
	}
	w.Add("depth", p.Meta.Depth)
	if p.Meta.Seed > 0 {
		w.Add("seed", fmt.Sprintf("number %d of the crawl's seeds", p.Meta.Seed))
	}
	if k := p.Key; k != nil {
		w.Add("politeness key", k.Key)
		w.Add("visit state", keyState(*k))
		if !k.NextFetch.IsZero() {
			w.Add("next fetch of its key", k.NextFetch)
		}
		if k.Addr.IsValid() && !k.IPNextFetch.IsZero() {
			w.Add("next fetch of its IP "+k.Addr.String(), k.IPNextFetch)
		}
		w.Add("delay", k.Delay.String()+" ("+k.DelayWhy.String()+")")
		if k.DownTries > 0 {
			w.Add("host unreachable", fmt.Sprintf("for %s, %d tries: its URLs wait (given up after --host-down-give-up)",
				k.Down.Round(time.Millisecond), k.DownTries))
		}
	}
	return true
}

// knownNotHeld explains a URL the sieve knows that nothing holds and the
// archive and the logs do not name.
func (a *Agent) knownNotHeld(ctx context.Context, w *console.Why, u urlx.URL) {
	w.State = console.WhyKnown
	k, _, _, budget, ok, _ := a.frontier.KeyQueue(ctx, u.SchemeAuthority())
	limit := a.frontier.Settings().MaxURLsPerKey
	switch {
	case ok && k.Broken:
		w.State, w.Rule = console.WhyFailed, k.DropWhy.String()
		if k.DropWhy == frontier.DropBlocked {
			w.State = console.WhyRefused
		}
		w.Detail = "its visit state " + k.Key + " was purged (" + dropDetail[crawllog.Reason(w.Rule)] + "): its URLs were dropped"
	case limit > 0 && budget >= limit:
		w.State, w.Rule = console.WhyRefused, "over-budget"
		w.Detail = fmt.Sprintf("the sieve knows it, and its key has used its budget (%d of %d URLs): it was dropped after the sieve", budget, limit)
	default:
		w.Detail = "the sieve knows it (it will never be fetched twice), but nothing holds it now and no fetch or refusal of it is recorded"
	}
	if w.State == console.WhyKnown || k.Broken {
		a.unloggedCaveat(w)
	}
	if ok {
		w.Add("politeness key", k.Key)
		w.Add("visit state", keyState(k))
	}
}

// unloggedCaveat says when refusals were counted but not logged, so that
// the answer may miss the one of this URL.
func (a *Agent) unloggedCaveat(w *console.Why) {
	f := a.crawlLog.Figures()
	if n := f.SkippedDropped + a.stats.DropsUnlogged.Load(); n > 0 {
		w.Caveats = append(w.Caveats, fmt.Sprintf("%d refusals were counted but not written to logs/skipped.jsonl (past its cap, or dropped in bulk past the drop log's bounds): this URL's may be one of them", n))
	}
}

// dropDetail explains the reasons for which URLs are dropped with their
// host or refused after the sieve.
var dropDetail = map[crawllog.Reason]string{
	crawllog.ReasonBrokenHost:   "its fetches failed too many times in a row",
	crawllog.ReasonRobotsFailed: "its robots.txt could not be fetched after every retry",
	crawllog.ReasonDNS:          "its host name did not resolve",
	crawllog.ReasonAddress:      "the address guard refused its host's address",
	crawllog.ReasonBlocklist:    "its host or address is on the blocklist",
	crawllog.ReasonOverBudget:   "its key had used its budget of URLs (--max-urls-per-host)",
	crawllog.ReasonRetries:      "it failed on every try",
	crawllog.ReasonHostDown:     "its host could not be reached for --host-down-give-up (petrel crawl --retry-failed fetches it again)",
}

func refusedByRule(w *console.Why, rule string) {
	w.State, w.Rule = console.WhyRefused, rule
	w.Detail = map[string]string{
		"blocklist":    "its host or address is on the blocklist",
		"scope":        "it is outside the crawl's scope",
		"trap-length":  "it is longer than --max-url-length",
		"trap-segment": "its path repeats a segment more often than --max-segment-repeats allows",
	}[rule]
	w.Caveats = append(w.Caveats, "the rule refuses it now; it was refused (and counted) whenever a page linked to it")
}

func refusedByRobots(w *console.Why, rule, whose string) {
	w.State, w.Rule = console.WhyRefused, "robots"
	w.Detail = "robots.txt disallows it"
	if rule != "" {
		w.Add("matching line", rule)
	}
	w.Add("robots.txt", whose)
}

// evidence is what the files of a crawl directory say of one URL.
type evidence struct {
	url      string
	archive  store.Archive
	captures []store.Capture
	failures []string        // "time: error" of each failed attempt logged
	refusals []crawllog.Skip // from logs/skipped.jsonl, in order
	notes    []string
}

// readEvidence reads the archive and the logs of dir for url. With open
// the WARC files being written are read too.
func readEvidence(dir, url string, open bool) (*evidence, error) {
	ev := &evidence{url: url}
	warcDir := filepath.Join(dir, "warc")
	ents, _ := os.ReadDir(warcDir)
	var files []string
	for _, e := range ents {
		n := e.Name()
		if store.IsWARCName(n) || (open && strings.HasSuffix(n, ".open")) {
			files = append(files, filepath.Join(warcDir, n))
		}
	}
	ev.archive = store.Archive{WARCDir: warcDir, Files: files}
	for _, f := range files {
		cs, err := (store.Archive{WARCDir: warcDir, Files: []string{f}}).Captures(url)
		if err != nil && strings.HasSuffix(f, ".open") {
			ev.notes = append(ev.notes, "the WARC file being written could only be read in part")
		} else if err != nil {
			return nil, err
		}
		for i := range cs {
			cs[i].Path = f
		}
		ev.captures = append(ev.captures, cs...)
	}
	sort.SliceStable(ev.captures, func(i, j int) bool { return ev.captures[i].Date.Before(ev.captures[j].Date) })
	ev.readLogs(filepath.Join(dir, "logs"))
	return ev, nil
}

// readLogs finds the URL's failed fetches in the event log and its
// refusals in skipped.jsonl (rotated files included).
func (ev *evidence) readLogs(dir string) {
	needle := []byte(`"url":` + strconv.Quote(ev.url))
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	sort.Strings(files)
	for _, p := range files {
		base := filepath.Base(p)
		skipped := strings.HasPrefix(base, "skipped")
		if !skipped && !strings.HasPrefix(base, "events") && !strings.HasPrefix(base, "crawl.log") {
			continue
		}
		f, err := os.Open(p)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Bytes()
			if !bytes.Contains(line, needle) {
				continue
			}
			var m map[string]any
			if json.Unmarshal(line, &m) != nil {
				continue
			}
			switch {
			case skipped:
				if s, err := crawllog.ParseSkip(line); err == nil {
					ev.refusals = append(ev.refusals, s)
				}
			case m["msg"] == "fetch failed":
				ev.failures = append(ev.failures, fmt.Sprintf("%v: %v (%v)", m["time"], m["kind"], m["err"]))
			}
		}
		f.Close()
	}
}

// decide sets the state from the files when they settle it: fetched, or
// failed with no retry left.
func (ev *evidence) decide(w *console.Why, maxRetries int) bool {
	if len(ev.captures) > 0 {
		ev.addFetched(w, true)
		return true
	}
	if len(ev.failures) > 0 {
		w.State = console.WhyFailed
		w.Detail = fmt.Sprintf("fetching failed %d times; no response was stored", len(ev.failures))
		for i, f := range ev.failures {
			w.Add(fmt.Sprintf("attempt %d", i+1), f)
		}
		w.Add("retries left", max(maxRetries+1-len(ev.failures), 0))
		w.Caveats = append(w.Caveats, ev.notes...)
		return true
	}
	return false
}

// skipped reports the last refusal logs/skipped.jsonl recorded: a URL
// dropped with its host (broken, its robots.txt unavailable, its name or
// address dead) failed; any other was refused.
func (ev *evidence) skipped(w *console.Why) bool {
	if len(ev.refusals) == 0 {
		return false
	}
	s := ev.refusals[len(ev.refusals)-1]
	w.State, w.Rule = console.WhyRefused, string(s.Reason)
	switch s.Reason {
	case crawllog.ReasonBrokenHost, crawllog.ReasonRobotsFailed, crawllog.ReasonDNS, crawllog.ReasonAddress, crawllog.ReasonRetries, crawllog.ReasonHostDown:
		w.State = console.WhyFailed
	}
	w.Detail = "refused: " + w.Rule + " (logs/skipped.jsonl)"
	if d := dropDetail[s.Reason]; d != "" {
		w.Detail = "dropped, not fetched: " + d + " (logs/skipped.jsonl)"
	}
	if s.Reason == crawllog.ReasonEmbedHops {
		w.Detail = "not fetched: a requisite of " + s.Via + ", which was at the embed hop limit (logs/skipped.jsonl)"
	}
	if s.Rule != "" {
		w.Add("rule", s.Rule)
	}
	w.Add("refused at", s.Time)
	w.Add("crawl.log status", s.Status)
	return true
}

// addFetched adds the captures; with state it sets the state too.
func (ev *evidence) addFetched(w *console.Why, state bool) {
	if len(ev.captures) == 0 {
		return
	}
	last := ev.captures[len(ev.captures)-1]
	status, refers := captureStatus(last)
	if state {
		w.State = console.WhyFetched
		w.Detail = fmt.Sprintf("fetched %d time(s); the last response is stored", len(ev.captures))
	}
	for i, c := range ev.captures {
		n := ""
		if len(ev.captures) > 1 {
			n = fmt.Sprintf(" %d", i+1)
		}
		w.Add("fetched"+n, c.Date)
		if i == len(ev.captures)-1 && status != "" {
			w.Add("status", status)
		}
		w.Add("WARC record"+n, fmt.Sprintf("%s at offset %d (%s)", filepath.Base(c.Path), c.Offset, c.Type))
		if c.Digest != "" {
			w.Add("payload digest"+n, "sha1:"+c.Digest)
		}
	}
	if refers != "" {
		w.Add("duplicate of", refers)
	}
	w.Caveats = append(w.Caveats, ev.notes...)
}

// captureStatus reads a capture's HTTP status line and, for a revisit,
// what it duplicates.
func captureStatus(c store.Capture) (status, refersTo string) {
	rec, err := store.ReadRecord(c.Path, c.Offset)
	if err != nil {
		return "", ""
	}
	head, block, _ := bytes.Cut(rec, []byte("\r\n\r\n"))
	for _, l := range strings.Split(string(head), "\r\n") {
		if v, ok := strings.CutPrefix(l, "WARC-Refers-To-Target-URI: "); ok {
			refersTo = v + refersTo
		}
		if v, ok := strings.CutPrefix(l, "WARC-Refers-To-Date: "); ok {
			refersTo += " of " + v
		}
	}
	line, _, _ := bytes.Cut(block, []byte("\r\n"))
	if f := strings.Fields(string(line)); len(f) >= 2 && strings.HasPrefix(f[0], "HTTP/") {
		status = strings.Join(f[1:], " ")
	}
	return status, refersTo
}

// WhyDir tells what a stopped crawl directory's files say of one URL: its
// sieve, its ready queue, its WARC files and its logs. It takes the
// directory's lock: a running crawl is asked through its console instead.
func WhyDir(dir, raw string) (console.Why, error) {
	u, err := urlx.Parse(raw)
	if err != nil {
		return malformed(raw, err), nil
	}
	url := u.String()
	w := console.Why{URL: url, Source: dir}
	a := &Agent{cfg: Config{Dir: dir}}
	if _, err := os.Stat(filepath.Join(dir, "state")); err != nil {
		return w, usageErr("%s is not a crawl directory: %v", dir, err)
	}
	if err := a.lockDir(); err != nil {
		return w, usageErr("crawl directory %s is in use: ask the running crawl with --console ADDR", dir)
	}
	defer a.lock.Close()
	state := filepath.Join(dir, "state")
	if _, err := os.Stat(filepath.Join(state, "RUNNING")); err == nil {
		w.Caveats = append(w.Caveats, "the last crawl in this directory did not stop cleanly: URLs it held in RAM are only in its last checkpoint")
	}
	ev, err := readEvidence(dir, url, false)
	if err != nil {
		return w, err
	}
	if ev.decide(&w, Defaults().Frontier.MaxRetries) {
		return w, nil
	}
	if rule, whose, ok := robotsFromArchive(ev.archive, u); ok {
		refusedByRobots(&w, rule, whose)
		return w, nil
	}
	key := u.AppendString(frontier.Meta{}.Append(nil))
	found, aux, err := sieve.ContainsDir(filepath.Join(state, "sieve"), key,
		sieve.Options{KeyPrefix: frontier.MetaLen, GroupHash: a.cfg.Frontier.Assign.GroupHash})
	if err != nil {
		return w, err
	}
	if aux {
		w.Caveats = append(w.Caveats, "the sieve holds keys of an unfinished flush, not searched (the next start replays them)")
	}
	if found {
		q, err := diskq.Open(filepath.Join(state, "ready"), diskq.DefaultOptions())
		if err != nil {
			return w, err
		}
		pos, inReady := int64(0), false
		q.Scan(func(rec []byte) bool {
			if len(rec) >= frontier.MetaLen && string(rec[frontier.MetaLen:]) == url {
				inReady = true
				return false
			}
			pos++
			return true
		})
		n := q.Len()
		q.Close()
		if inReady {
			w.State = console.WhyReady
			w.Detail = fmt.Sprintf("in the ready queue at position %d of %d: the next run fetches it", pos, n)
			w.Add("position", pos)
			return w, nil
		}
		if ev.skipped(&w) {
			return w, nil
		}
		if rev, err := readEvidence(dir, u.SchemeAuthority()+"/robots.txt", false); err == nil && len(rev.failures) > 0 && len(rev.captures) == 0 {
			w.State, w.Rule = console.WhyFailed, "robots-unavailable"
			w.Detail = "the robots.txt of its authority could not be fetched after every retry, so its URLs were dropped"
			for i, f := range rev.failures {
				w.Add(fmt.Sprintf("robots.txt attempt %d", i+1), f)
			}
			return w, nil
		}
		w.State = console.WhyKnown
		w.Detail = "the sieve knows it (it will never be fetched twice), but it is not queued, not in the WARC files and not in the logs"
		w.Caveats = append(w.Caveats, "refusals are kept per URL in logs/skipped.jsonl up to its cap (--skipped-total-bytes), and a URL the crawl gives up in bulk past the drop log's bounds is counted (DropsUnlogged), not logged")
		return w, nil
	}
	if ev.skipped(&w) {
		return w, nil
	}
	if _, err := a.block.load(filepath.Join(state, blocklistFile)); err == nil && a.blocked(u) {
		refusedByRule(&w, "blocklist")
		w.Add("blocklist", "state/"+blocklistFile)
		return w, nil
	}
	w.State, w.Detail = console.WhyNeverSeen, "the sieve does not know it and no file of the crawl names it"
	w.Caveats = append(w.Caveats, "the scope and trap rules are not kept in the directory: a URL they refused leaves no trace unless logs/skipped.jsonl has it",
		"URLs the URL cache caught never reach the sieve only if they were already in it")
	return w, nil
}

// robotsFromArchive evaluates the robots.txt of u's authority as stored
// in the archive (its last capture).
func robotsFromArchive(a store.Archive, u urlx.URL) (rule, whose string, denied bool) {
	robotsURL := u.SchemeAuthority() + "/robots.txt"
	cs, err := a.Captures(robotsURL)
	if err != nil || len(cs) == 0 {
		return "", "", false
	}
	c := cs[len(cs)-1]
	p, err := a.ReadPayload(c.Path, c.Offset)
	if err != nil || p.Status < 200 || p.Status >= 300 {
		return "", "", false
	}
	allowed, rule := robots.Parse(p.Body, "petrel").Match(u.PathQuery)
	if allowed {
		return "", "", false
	}
	return rule, fmt.Sprintf("%s fetched %s (%s at offset %d)", robotsURL, c.Date.UTC().Format(time.RFC3339), filepath.Base(c.Path), c.Offset), true
}
