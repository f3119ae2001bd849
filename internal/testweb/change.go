package testweb

// The changing web: with Config.ChangeDay set, every HTML page of the
// normal web answered with 200 changes over time, each at its own rate,
// on a fast clock on which a day lasts ChangeDay. Everything is a pure
// function of (seed, page, time): no state is kept per page.
//
// A page of period P (the mean time between its changes) changes once in
// each window [t0+kP, t0+(k+1)P), at t0+kP+u(k)P where u(k) in [0,1) is a
// hash of (seed, page, k), so its version at t is the number of changes
// before t: n = ⌊(t−t0)/P⌋, plus one if the change of window n has
// happened. The periods follow a heavy-tailed mix (changePeriod).

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Validators says which validators a host of the changing web sends.
type Validators uint8

const (
	ValidatorsBoth  Validators = iota // ETag and Last-Modified of the version served
	ValidatorsDate                    // Last-Modified only
	ValidatorsETag                    // ETag only
	ValidatorsNone                    // neither: every request gets the page
	ValidatorsNow                     // wrong: Last-Modified is the time of the request, no ETag (never 304)
	ValidatorsStale                   // wrong: the validators of version 0 forever (304 although the page changed)
)

func (v Validators) String() string {
	return [...]string{"both", "last-modified", "etag", "none", "now", "stale"}[v]
}

// changeClass is one class of the mix of change rates: share per thousand
// pages, and the mean period in fast-clock days.
type changeClass struct {
	perMille int
	days     float64
}

// changeMix is the heavy-tailed mix of periods: most pages change rarely,
// some daily, some hourly, a few every minute. Within a class the period
// is spread log-uniformly over a factor of four around its mean.
var changeMix = []changeClass{
	{600, 7},         // rarely: about weekly
	{250, 1},         // daily
	{120, 1.0 / 24},  // hourly
	{30, 1.0 / 1440}, // every minute
}

// ChangeMix describes the mix of change rates, for reports.
const ChangeMix = "60 % of pages about weekly, 25 % daily, 12 % hourly, 3 % every minute (each spread ×/÷ 2 log-uniformly)"

// hash64 hashes the seed, a string and integers.
func (w *Web) hash64(s string, xs ...uint64) uint64 {
	h := fnv.New64a()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(w.cfg.Seed))
	h.Write(b[:])
	h.Write([]byte(s))
	for _, x := range xs {
		binary.LittleEndian.PutUint64(b[:], x)
		h.Write(b[:])
	}
	v := h.Sum64()
	// fnv's low bits mix poorly for short inputs: finish with a
	// SplitMix64 step.
	v ^= v >> 30
	v *= 0xbf58476d1ce4e5b9
	v ^= v >> 27
	v *= 0x94d049bb133111eb
	return v ^ v>>31
}

// unit maps a hash to [0,1).
func unit(h uint64) float64 { return float64(h>>11) / (1 << 53) }

// changePeriod is the mean time between two changes of the page at key
// ("host path").
func (w *Web) changePeriod(key string) time.Duration {
	h := w.hash64(key, 1)
	x := int(h % 1000)
	c := changeMix[len(changeMix)-1]
	for _, cc := range changeMix {
		if x < cc.perMille {
			c = cc
			break
		}
		x -= cc.perMille
	}
	spread := math.Exp2(2*unit(w.hash64(key, 2)) - 1) // ×/÷ 2
	return time.Duration(c.days * spread * float64(w.cfg.ChangeDay))
}

// changing reports whether res is a page that changes.
func (w *Web) changing(res *resource) bool {
	return w.cfg.ChangeDay > 0 && res.status == http.StatusOK && strings.HasPrefix(res.ctype, "text/html")
}

// versionAt is the version of the page at key at t (0 before its first
// change), and the time of that version's change (t0 for version 0).
func (w *Web) versionAt(key string, t time.Time) (uint32, time.Time) {
	p := w.changePeriod(key)
	d := t.Sub(w.born)
	if d < 0 || p <= 0 {
		return 0, w.born
	}
	n := int64(d / p)
	v, changed := n, w.changeTime(key, n)
	if !changed.After(t) {
		v++
	} else if n > 0 {
		changed = w.changeTime(key, n-1)
	} else {
		changed = w.born
	}
	return uint32(min(v, math.MaxUint32)), changed
}

// VersionAt returns the version of the page at URL u at time t, and false
// when u is not a changing page of this web.
func (w *Web) VersionAt(u string, t time.Time) (uint32, bool) {
	s, p := w.lookup(u)
	if s == nil || s.res[p] == nil || !w.changing(s.res[p]) {
		return 0, false
	}
	v, _ := w.versionAt(s.name+" "+p, t)
	return v, true
}

// ChangePeriod returns the mean time between changes of the page at URL u
// (0 when it does not change).
func (w *Web) ChangePeriod(u string) time.Duration {
	s, p := w.lookup(u)
	if s == nil || s.res[p] == nil || !w.changing(s.res[p]) {
		return 0
	}
	return w.changePeriod(s.name + " " + p)
}

// HostValidators returns which validators the host named host sends.
func (w *Web) HostValidators(host string) Validators {
	return validatorsOf(w.hash64(strings.ToLower(host), 4))
}

// validatorsOf picks a host's validators from a hash: 55 % both, 15 %
// Last-Modified only, 10 % ETag only, 10 % none, 5 % "now", 5 % stale.
func validatorsOf(h uint64) Validators {
	switch x := h % 100; {
	case x < 55:
		return ValidatorsBoth
	case x < 70:
		return ValidatorsDate
	case x < 80:
		return ValidatorsETag
	case x < 90:
		return ValidatorsNone
	case x < 95:
		return ValidatorsNow
	}
	return ValidatorsStale
}

// serveChanging answers a request for the changing page res of s at path
// p, at time now: its validators, a 304 when the request's validators
// match, else the page of its current version. It returns the status and
// the version served.
func (w *Web) serveChanging(rw http.ResponseWriter, r *http.Request, s *site, p string, res *resource, now time.Time) (int, uint32) {
	key := s.name + " " + p
	v, changed := w.versionAt(key, now)
	kind := w.HostValidators(s.name)
	vv, vt := v, changed
	if kind == ValidatorsStale {
		vv, vt = 0, w.born
	}
	var etag, lm string
	if kind == ValidatorsBoth || kind == ValidatorsETag || kind == ValidatorsStale {
		etag = fmt.Sprintf(`"%016x"`, w.hash64(key, 5, uint64(vv)))
	}
	switch kind {
	case ValidatorsBoth, ValidatorsDate, ValidatorsStale:
		lm = vt.UTC().Format(http.TimeFormat)
	case ValidatorsNow:
		lm = now.UTC().Format(http.TimeFormat)
	}
	hd := rw.Header()
	if etag != "" {
		hd.Set("ETag", etag)
	}
	if lm != "" {
		hd.Set("Last-Modified", lm)
	}
	if notModified(r, etag, lm) {
		rw.WriteHeader(http.StatusNotModified)
		return http.StatusNotModified, v
	}
	mark := versionMark(v)
	hd.Set("Content-Type", res.ctype)
	hd.Set("Content-Length", strconv.Itoa(res.length+len(mark)))
	rw.WriteHeader(http.StatusOK)
	rw.Write(res.head)
	for _, i := range res.filler {
		rw.Write(w.pool[i])
	}
	rw.Write(mark)
	rw.Write(res.tail)
	return http.StatusOK, v
}

// notModified applies RFC 9110 §13.1: If-None-Match when the request has
// it (weak comparison), else If-Modified-Since against Last-Modified.
func notModified(r *http.Request, etag, lm string) bool {
	if inm := r.Header.Get("If-None-Match"); inm != "" {
		if etag == "" {
			return false
		}
		for _, t := range strings.Split(inm, ",") {
			t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
			if t == "*" || t == strings.TrimPrefix(etag, "W/") {
				return true
			}
		}
		return false
	}
	ims := r.Header.Get("If-Modified-Since")
	if ims == "" || lm == "" {
		return false
	}
	since, err1 := http.ParseTime(ims)
	mod, err2 := http.ParseTime(lm)
	return err1 == nil && err2 == nil && !mod.After(since)
}

// changeTime is the time of change k (from 0) of the page at key: the
// change that made version k+1.
func (w *Web) changeTime(key string, k int64) time.Time {
	p := w.changePeriod(key)
	return w.born.Add(time.Duration(k)*p + time.Duration(unit(w.hash64(key, 3, uint64(k)))*float64(p)))
}

// Freshness is how fresh a crawler kept the changing pages, judged from
// the request log alone.
type Freshness struct {
	Pages     int           // changing pages captured (a 200) before the window
	Freshness float64       // time-averaged share of those pages whose copy is the live version
	Age       time.Duration // time-averaged age of a copy: 0 while fresh, else time since the live version first differed
	Revisits  int           // requests of those pages in the window
	NotMod    int           // of which answered 304
	// BodyBytes are the body bytes those requests got; FullBytes what they
	// would have got without validators (the live version's body each
	// time); both only for the Validated requests, those of pages of hosts
	// that send validators.
	BodyBytes, FullBytes int64
	Validated            int
}

// Freshness judges the copies a crawler holds of the changing pages over
// [from, to] from hits (the request log): a page's copy is the version of
// its last 200 (received at the hit's End), kept through 304s, and is fresh
// while it equals the live version.
func (w *Web) Freshness(hits []Hit, from, to time.Time) Freshness {
	var f Freshness
	byPage := map[string][]Hit{}
	for _, h := range hits {
		s := w.byName[h.Host]
		if s == nil || s.res[h.Path] == nil || !w.changing(s.res[h.Path]) || (h.Status != 200 && h.Status != 304) {
			continue
		}
		byPage[h.Host+" "+h.Path] = append(byPage[h.Host+" "+h.Path], h)
	}
	var fresh, age float64
	for key, hs := range byPage {
		sort.Slice(hs, func(i, j int) bool { return hs[i].End.Before(hs[j].End) })
		if hs[0].Status != 200 || !hs[0].End.Before(from) {
			continue
		}
		f.Pages++
		fr, ag := w.pageFreshness(key, hs, from, to)
		fresh, age = fresh+fr, age+ag
		w.countBytes(&f, key, hs, from, to)
	}
	if f.Pages > 0 {
		span := to.Sub(from).Seconds() * float64(f.Pages)
		f.Freshness = fresh / span
		f.Age = time.Duration(age / span * 1e9)
	}
	return f
}

// pageFreshness integrates the freshness (seconds fresh) and the age
// (second·seconds) of one page's copy over [from, to].
func (w *Web) pageFreshness(key string, hs []Hit, from, to time.Time) (fresh, age float64) {
	p := w.changePeriod(key)
	events := []time.Time{from, to}
	for k := int64(max(from.Sub(w.born)/p-1, 0)); ; k++ {
		c := w.changeTime(key, k)
		if c.After(to) {
			break
		}
		if c.After(from) {
			events = append(events, c)
		}
	}
	for _, h := range hs {
		if h.Status == 200 && h.End.After(from) && h.End.Before(to) {
			events = append(events, h.End)
		}
	}
	sort.Slice(events, func(i, j int) bool { return events[i].Before(events[j]) })
	i := 0 // hs[:i] ended before the segment
	copyV := uint32(0)
	for e := 1; e < len(events); e++ {
		a, b := events[e-1], events[e]
		if !b.After(a) {
			continue
		}
		for ; i < len(hs) && !hs[i].End.After(a); i++ {
			if hs[i].Status == 200 {
				copyV = hs[i].Version
			}
		}
		live, _ := w.versionAt(key, a.Add(b.Sub(a)/2))
		if live == copyV {
			fresh += b.Sub(a).Seconds()
			continue
		}
		stale := w.changeTime(key, int64(copyV)) // the change that outdated the copy
		x, y := a.Sub(stale).Seconds(), b.Sub(stale).Seconds()
		age += (y*y - x*x) / 2
	}
	return fresh, age
}

// countBytes adds the requests of one page in [from, to] to f.
func (w *Web) countBytes(f *Freshness, key string, hs []Hit, from, to time.Time) {
	host, path, _ := strings.Cut(key, " ")
	res := w.byName[host].res[path]
	kind := w.HostValidators(host)
	for _, h := range hs {
		if h.Start.Before(from) || h.Start.After(to) {
			continue
		}
		f.Revisits++
		if h.Status == 304 {
			f.NotMod++
		}
		if kind == ValidatorsNone || kind == ValidatorsNow {
			continue
		}
		f.Validated++
		full := int64(res.length + len(versionMark(h.Version)))
		f.FullBytes += full
		if h.Status == 200 {
			f.BodyBytes += full
		}
	}
}

// versionMark is the paragraph that says a page's version.
func versionMark(v uint32) []byte {
	return []byte("<p class=\"version\">Version " + strconv.FormatUint(uint64(v), 10) + " of this page.</p>\n")
}

// Changing reports whether the resource at path on the host named host is
// a page of the changing web.
func (w *Web) Changing(host, path string) bool {
	s := w.byName[host]
	return s != nil && s.res[path] != nil && w.changing(s.res[path])
}
