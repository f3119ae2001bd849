package agent

import (
	"net/http"

	"github.com/petrel-crawler/petrel/internal/dataset"
	"github.com/petrel-crawler/petrel/internal/fetch"
	"github.com/petrel-crawler/petrel/internal/parse"
	"github.com/petrel-crawler/petrel/internal/store"
	"github.com/petrel-crawler/petrel/internal/urlx"
)

// readForDatasets reads a response before it is stored when the dataset
// outputs are written: its payload decoded as they read it from its
// record (dataset.Decode) and, when they take it for a page
// (dataset.IsPage), parsed once, with what the WAT needs
// (parse.Options.Meta) collected in the crawl's own parse, which parse
// (parsers.go) then uses. The page's languages are detected as readEarly
// detects them when langs is set. The Capture made of it goes with the
// exchange to the store, and from there to the outputs (datasets.go).
func (a *Agent) readForDatasets(resp *fetch.Response, base urlx.URL, baseOK, langs bool) *early {
	p := dataset.Decode(resp.RawResponse, resp.Truncated, pooledDecoder(resp))
	if int64(len(p.Body)) > a.live.Load().maxBody {
		return a.readBeyondMaxBody(resp, base, baseOK, p, langs)
	}
	e := &early{body: p.Body, err: p.Err}
	s := a.datasets.scratch.Get().(*dataset.Scratch)
	defer a.datasets.scratch.Put(s)
	if baseOK && dataset.IsPage(&p) {
		res := parse.HTML(base, p.Header, p.Body, a.pageOptions(&s.Meta, langs))
		e.res = &res
	}
	e.capture = s.Capture(p, e.res, a.datasets.opts)
	if langs {
		e.langs, _ = bodyLanguages(e.res, p.Header, p.Body)
	}
	return e
}

// readBeyondMaxBody reads a response whose decoded payload p is longer
// than the crawl reads of a body (--max-body): the outputs take the
// whole payload, parsed for them alone, and the crawl reads the response
// as it does without them.
func (a *Agent) readBeyondMaxBody(resp *fetch.Response, base urlx.URL, baseOK bool, p store.Payload, langs bool) *early {
	var res *parse.Result
	s := a.datasets.scratch.Get().(*dataset.Scratch)
	defer a.datasets.scratch.Put(s)
	if baseOK && dataset.IsPage(&p) {
		r := parse.HTML(base, p.Header, p.Body, parse.Options{Meta: &s.Meta})
		res = &r
	}
	c := s.Capture(p, res, a.datasets.opts)
	var e *early
	if langs {
		e = a.readLanguages(resp, base)
	}
	if e == nil {
		body, err := fetch.DecodeBody(resp, a.live.Load().maxBody)
		e = &early{body: body, err: err}
	}
	e.capture = c
	return e
}

// pooledDecoder returns the store.BodyDecoder that undoes a body's
// Content-Encoding as fetch.DecodeBody does, with the decompressors the
// fetcher of resp pools.
func pooledDecoder(resp *fetch.Response) store.BodyDecoder {
	return func(h http.Header, body []byte, max int64) ([]byte, error) {
		r := *resp
		r.Header, r.Body = h, body
		return fetch.DecodeBody(&r, max)
	}
}
