package testweb

import (
	"sort"
	"strings"
	"time"
)

// A Gap is a politeness violation in a web's request log: a request that
// began too soon after the end of an earlier one to the same host or
// address.
type Gap struct {
	What       string // "host NAME" or "ip ADDRESS"
	Prev, Next Hit    // the earlier request that ended last, and the one too soon after it
	Gap        time.Duration
	Delay      time.Duration // the delay the key wants
}

// PolitenessGaps returns the politeness violations in hits: the requests
// to one host (one address) that began less than hostDelay (ipDelay)
// after the end of the earlier request to it that ended last, less
// tolerance when that one was cut short (Hit.Cut); an overlap is a
// negative gap. Since a Hit's Start never precedes the request and its
// End never follows the response's last byte, a gap in the log is never
// shorter than the one the client saw.
func PolitenessGaps(hits []Hit, hostDelay, ipDelay, tolerance time.Duration) []Gap {
	byKey := map[string][]Hit{}
	for _, h := range hits {
		byKey["host "+h.Host] = append(byKey["host "+h.Host], h)
		byKey["ip "+h.IP.String()] = append(byKey["ip "+h.IP.String()], h)
	}
	var out []Gap
	for what, hs := range byKey {
		delay := hostDelay
		if strings.HasPrefix(what, "ip ") {
			delay = ipDelay
		}
		sort.SliceStable(hs, func(i, j int) bool { return hs[i].Start.Before(hs[j].Start) })
		last := 0 // the earlier hit that ended last
		for i := 1; i < len(hs); i++ {
			p := hs[last]
			gap, want := hs[i].Start.Sub(p.End), delay
			if p.Cut {
				want -= tolerance
			}
			if gap < want {
				out = append(out, Gap{What: what, Prev: p, Next: hs[i], Gap: gap, Delay: delay})
			}
			if hs[i].End.After(p.End) {
				last = i
			}
		}
	}
	return out
}
