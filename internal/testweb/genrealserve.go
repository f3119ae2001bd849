package testweb

import (
	"bytes"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/gzip"
)

// serveReal answers one request of the real shape (see [ShapeReal]): after
// the host's latency, a dropped connection (down hosts), a redirect (bare
// name → www, http → https), robots.txt, a page (compressed when asked),
// 503 (failing hosts), 404 or 421. It returns the status (0: dropped).
func (w *GenWeb) serveReal(rw http.ResponseWriter, r *http.Request, name string) int {
	g := w.gen
	h, bare, err := g.resolve(name)
	if err != nil || g.addrIndexOf(localAddr(r)) != g.AddrIndex(h) {
		w.misdirected.Add(1)
		writeBody(rw, http.StatusMisdirectedRequest, "text/plain; charset=utf-8", []byte("no such host here\n"))
		return http.StatusMisdirectedRequest
	}
	if r.TLS != nil {
		w.tlsReqs.Add(1)
	}
	if r.ProtoMajor == 2 {
		w.h2Reqs.Add(1)
	}
	t := g.traits(h)
	uri := r.RequestURI
	p := -1
	if uri != "/robots.txt" {
		if p, err = g.Page(h, uri); err != nil {
			p = -2
		}
	}
	if !wait(r, g.latency(t, h, p)) {
		return 0
	}
	if t.down {
		w.dropped.Add(1)
		if hj, ok := rw.(http.Hijacker); ok {
			if c, _, err := hj.Hijack(); err == nil {
				c.Close()
				return 0
			}
		}
		panic(http.ErrAbortHandler) // aborts the stream without an answer
	}
	if bare || t.https != (r.TLS != nil) {
		var b strings.Builder
		g.origin(&b, h, false, false)
		b.WriteString(uri)
		w.redirects.Add(1)
		rw.Header().Set("Location", b.String())
		writeBody(rw, http.StatusMovedPermanently, "text/html; charset=utf-8", movedBody)
		return http.StatusMovedPermanently
	}
	switch {
	case p == -1:
		w.robots.Add(1)
		body := g.Robots(h)
		w.bytes.Add(int64(len(body)))
		writeBody(rw, http.StatusOK, "text/plain; charset=utf-8", body)
		return http.StatusOK
	case p == -2:
		w.notFound.Add(1)
		writeBody(rw, http.StatusNotFound, "text/html; charset=utf-8", notFoundBody)
		return http.StatusNotFound
	case pageFails(t, p):
		w.failures.Add(1)
		writeBody(rw, http.StatusServiceUnavailable, "text/html; charset=utf-8", unavailableBody)
		return http.StatusServiceUnavailable
	}
	b := w.pool.Get().(*bytes.Buffer)
	defer w.pool.Put(b)
	b.Reset()
	g.Render(b, h, p)
	w.pages.Add(1)
	w.bytes.Add(int64(b.Len()))
	w.writePage(rw, r, t, b.Bytes())
	return http.StatusOK
}

var (
	movedBody       = []byte("<!DOCTYPE html>\n<html><head><title>301 Moved Permanently</title></head><body><h1>Moved Permanently</h1></body></html>\n")
	unavailableBody = []byte("<!DOCTYPE html>\n<html><head><title>503 Service Unavailable</title></head><body><h1>Service Unavailable</h1></body></html>\n")
)

// wait waits d, or until the request is abandoned (false).
func wait(r *http.Request, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	}
}

// encoders are the pooled compressors of a web.
type encoders struct {
	gz, br, out sync.Pool
}

// writePage writes an HTML page, brotli- or gzip-compressed when the
// request accepts it and the host offers it, with Content-Length.
func (w *GenWeb) writePage(rw http.ResponseWriter, r *http.Request, t hostTraits, body []byte) {
	const ctype = "text/html; charset=utf-8"
	ae := r.Header.Get("Accept-Encoding")
	rw.Header().Set("Vary", "Accept-Encoding")
	var coding string
	switch {
	case t.brotli && accepts(ae, "br"):
		coding = "br"
	case accepts(ae, "gzip"):
		coding = "gzip"
	default:
		writeBody(rw, http.StatusOK, ctype, body)
		return
	}
	out, _ := w.enc.out.Get().(*bytes.Buffer)
	if out == nil {
		out = new(bytes.Buffer)
	}
	defer w.enc.out.Put(out)
	out.Reset()
	if coding == "br" {
		w.brotlis.Add(1)
		bw, _ := w.enc.br.Get().(*brotli.Writer)
		if bw == nil {
			bw = brotli.NewWriterLevel(out, 1)
		}
		bw.Reset(out)
		bw.Write(body)
		bw.Close()
		w.enc.br.Put(bw)
	} else {
		w.gzips.Add(1)
		zw, _ := w.enc.gz.Get().(*gzip.Writer)
		if zw == nil {
			zw, _ = gzip.NewWriterLevel(out, gzip.BestSpeed)
		}
		zw.Reset(out)
		zw.Write(body)
		zw.Close()
		w.enc.gz.Put(zw)
	}
	rw.Header().Set("Content-Encoding", coding)
	writeBody(rw, http.StatusOK, ctype, out.Bytes())
}

// accepts reports whether an Accept-Encoding value lists coding with a
// non-zero weight.
func accepts(ae, coding string) bool {
	for part := range strings.SplitSeq(ae, ",") {
		name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if !strings.EqualFold(strings.TrimSpace(name), coding) {
			continue
		}
		q := strings.ReplaceAll(params, " ", "")
		return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
	}
	return false
}
