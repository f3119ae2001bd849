package benchcrawl

import (
	"fmt"
	"time"

	"github.com/petrel-crawler/petrel/internal/testweb"
)

// Politeness is what the synthetic web's own request log shows of one
// run: the requests it answered while the crawler's process lived, and
// the politeness violations among them (testweb.PolitenessGaps with the
// run's host and IP delays): a request to a host (an address) that began
// less than the delay after the end of the earlier request to it.
type Politeness struct {
	Requests       int64 `json:"requests"`
	HostViolations int64 `json:"host_violations"`
	IPViolations   int64 `json:"ip_violations"`
}

// judgeTolerance is the shortfall forgiven after a request the client
// cut short (the web's End may then follow the client's giving up), as
// in the end-to-end tests.
const judgeTolerance = 8 * time.Millisecond

// judgePoliteness reads the web's request log from path and sets the
// Politeness of each run in all from the requests that began between its
// process's start and end (runs do not overlap).
func judgePoliteness(all []RunResult, path string, hostDelay, ipDelay time.Duration) error {
	hits, err := testweb.ReadHitLog(path)
	if err != nil {
		return err
	}
	for i := range all {
		r := &all[i]
		if r.Skipped != "" || r.began.IsZero() {
			continue
		}
		var mine []testweb.Hit
		for _, h := range hits {
			if !h.Start.Before(r.began) && !h.Start.After(r.ended) {
				mine = append(mine, h)
			}
		}
		p := &Politeness{Requests: int64(len(mine))}
		for _, g := range testweb.PolitenessGaps(mine, hostDelay, ipDelay, judgeTolerance) {
			if g.What[0] == 'h' {
				p.HostViolations++
			} else {
				p.IPViolations++
			}
		}
		r.Politeness = p
	}
	return nil
}

// String says the figures in a table cell: host/IP violations.
func (p *Politeness) String() string {
	if p == nil {
		return "-"
	}
	return fmt.Sprintf("%d/%d", p.HostViolations, p.IPViolations)
}
