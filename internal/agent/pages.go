package agent

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"time"
)

// pageLog appends one JSON line per HTML page stored to logs/pages.jsonl:
// its URL, capture date, title (from the parser), HTTP status and media
// type, and whether it is a seed's page (no link or embed hop from a seed;
// redirects allowed). "petrel warc wacz" makes the WACZ page lists of it.
// Lines are buffered and written at a clean stop; a crash may lose the
// last ones (the pages stay in the WARC files and the index), and a page
// fetched again after a crash or a retry of a cut transfer has a line per
// capture.
type pageLog struct {
	mu  sync.Mutex
	f   *os.File
	bw  *bufio.Writer
	enc *json.Encoder
	err error // first write error, reported at close
}

// pageLine is one line of logs/pages.jsonl.
type pageLine struct {
	URL    string `json:"url"`
	TS     string `json:"ts"` // RFC 3339, UTC, microseconds
	Title  string `json:"title,omitempty"`
	Status int    `json:"status"`
	Mime   string `json:"mime,omitempty"`
	Seed   bool   `json:"seed,omitempty"`
}

func openPageLog(path string) (*pageLog, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	p := &pageLog{f: f, bw: bufio.NewWriterSize(f, 64<<10)}
	p.enc = json.NewEncoder(p.bw)
	p.enc.SetEscapeHTML(false)
	return p, nil
}

// add records one page.
func (p *pageLog) add(l pageLine, date time.Time) {
	l.TS = date.UTC().Format("2006-01-02T15:04:05.000000Z")
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.enc.Encode(l); err != nil && p.err == nil {
		p.err = err
	}
}

// close flushes and closes the file; it returns the first error met.
func (p *pageLog) close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	err := p.err
	if ferr := p.bw.Flush(); err == nil {
		err = ferr
	}
	if cerr := p.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("agent: page log: %w", err)
	}
	return nil
}
