package agent

import (
	"sync"

	"github.com/bits-and-blooms/bloom/v3"

	"github.com/petrel-crawler/petrel/internal/fetch"
	"github.com/petrel-crawler/petrel/internal/parse"
	"github.com/petrel-crawler/petrel/internal/store"
	"github.com/petrel-crawler/petrel/internal/urlx"
)

// parseLoop is one parser: it stores each response in the WARC files and,
// for HTML pages, extracts the links and enqueues them.
func (a *Agent) parseLoop(results <-chan *fetched) {
	for r := range results {
		a.handle(r)
		r.resp.Release()
		a.frontier.Release()
	}
}

func (a *Agent) handle(r *fetched) {
	resp, t := r.resp, r.task
	st := a.stats
	if t.Robots {
		st.RobotsFetched.Add(1)
	} else {
		st.Fetched.Add(1)
		st.CountStatus(resp.Status)
		st.CountContentType(resp.Header.Get("Content-Type"))
	}
	st.BytesReceived.Add(int64(len(resp.RawResponse)))
	if resp.Truncated != "" {
		st.Truncated.Add(1)
	}
	res, err := a.store.Write(&store.Exchange{
		TargetURI: resp.URL,
		IP:        resp.Addr.String(),
		Date:      resp.Start,
		Request:   resp.RawRequest,
		Response:  resp.RawResponse,
		Truncated: resp.Truncated,
	})
	if err != nil {
		st.StoreErrors.Add(1)
		a.log.Error("store", "url", resp.URL, "err", err)
	} else {
		st.Stored.Add(1)
		if res.Revisit {
			st.Duplicates.Add(1)
		}
	}
	if t.Robots {
		return
	}
	base, err := urlx.Parse(resp.URL)
	if err != nil {
		return
	}
	switch {
	case resp.Status >= 300 && resp.Status < 400:
		if loc := resp.Header.Get("Location"); loc != "" {
			if u, err := base.Resolve(loc); err == nil {
				st.Redirects.Add(1)
				a.offer(u)
			}
		}
	case resp.Status >= 200 && resp.Status < 300:
		a.parseHTML(base, resp)
	}
}

func (a *Agent) parseHTML(base urlx.URL, resp *fetch.Response) {
	st := a.stats
	body, err := fetch.DecodeBody(resp, a.cfg.MaxBody)
	if err != nil {
		a.log.Info("decode body", "url", resp.URL, "err", err)
	}
	if !parse.IsHTML(resp.Header, body) {
		return
	}
	res := parse.HTML(base, resp.Header, body, parse.Options{MaxLinks: a.cfg.MaxLinks})
	st.Parsed.Add(1)
	st.LinksFound.Add(int64(len(res.Links)))
	st.LinksDropped.Add(int64(res.LinksDropped))
	if res.NoFollow {
		st.NoFollow.Add(1)
		return
	}
	if a.digests.seen(res.TextDigest) {
		// Same normalised text on the same host: a duplicate, whose links
		// are not followed (this also ends traps that only change counters).
		st.TextDuplicates.Add(1)
		return
	}
	for _, u := range res.Links {
		a.offer(u)
	}
}

// textDigests is the Bloom filter of page text digests (BUbiNG's digests).
type textDigests struct {
	mu sync.Mutex
	f  *bloom.BloomFilter
}

func newTextDigests() *textDigests {
	return &textDigests{f: bloom.NewWithEstimates(10_000_000, 1e-9)}
}

// seen reports whether d was added before, and adds it.
func (t *textDigests) seen(d [16]byte) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.f.TestOrAdd(d[:])
}
