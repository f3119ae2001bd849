package dataset

import (
	"math"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	gowarc "github.com/nlnwa/gowarc/v3"
	"github.com/weppos/publicsuffix-go/publicsuffix"

	"github.com/petrel-crawler/petrel/internal/store"
	"github.com/petrel-crawler/petrel/internal/urlx"
)

// Row is one capture (response or revisit record) in the columnar index,
// with the column names and types of Common Crawl's cc-index-table, and
// content_simhash. An optional column is null where its field is zero
// ("" or nil).
type Row struct {
	URLSurtKey              string    `parquet:"url_surtkey"`
	URL                     string    `parquet:"url"`
	URLHostName             string    `parquet:"url_host_name"`
	URLHostTLD              string    `parquet:"url_host_tld,optional"`
	URLHost2ndLastPart      string    `parquet:"url_host_2nd_last_part,optional"`
	URLHost3rdLastPart      string    `parquet:"url_host_3rd_last_part,optional"`
	URLHost4thLastPart      string    `parquet:"url_host_4th_last_part,optional"`
	URLHost5thLastPart      string    `parquet:"url_host_5th_last_part,optional"`
	URLHostRegistrySuffix   string    `parquet:"url_host_registry_suffix,optional"`
	URLHostRegisteredDomain string    `parquet:"url_host_registered_domain,optional"`
	URLHostPrivateSuffix    string    `parquet:"url_host_private_suffix,optional"`
	URLHostPrivateDomain    string    `parquet:"url_host_private_domain,optional"`
	URLHostNameReversed     string    `parquet:"url_host_name_reversed,optional"`
	URLProtocol             string    `parquet:"url_protocol"`
	URLPort                 *int32    `parquet:"url_port,optional"`
	URLPath                 string    `parquet:"url_path,optional"`
	URLQuery                string    `parquet:"url_query,optional"`
	FetchTime               time.Time `parquet:"fetch_time,timestamp(millisecond)"`
	FetchStatus             int16     `parquet:"fetch_status"`
	FetchRedirect           string    `parquet:"fetch_redirect,optional"`
	ContentDigest           string    `parquet:"content_digest,optional"`
	ContentMimeType         string    `parquet:"content_mime_type,optional"`
	ContentMimeDetected     string    `parquet:"content_mime_detected,optional"`
	ContentCharset          string    `parquet:"content_charset,optional"`
	ContentLanguages        string    `parquet:"content_languages,optional"`
	ContentTruncated        string    `parquet:"content_truncated,optional"`
	// ContentSimHash is the page text's 64-bit SimHash (its bits as a
	// signed BIGINT: bit_count(xor(a, b)) is the Hamming distance); null for
	// what was not parsed as an HTML page.
	ContentSimHash   *int64 `parquet:"content_simhash,optional"`
	WARCFilename     string `parquet:"warc_filename"`
	WARCRecordOffset int32  `parquet:"warc_record_offset"`
	WARCRecordLength int32  `parquet:"warc_record_length"`
	WARCSegment      string `parquet:"warc_segment,optional"`
	Crawl            string `parquet:"crawl,optional"`
	Subset           string `parquet:"subset"`
}

var (
	icannOnly = &publicsuffix.FindOptions{IgnorePrivate: true, DefaultRule: publicsuffix.DefaultRule}
	withPriv  = &publicsuffix.FindOptions{IgnorePrivate: false, DefaultRule: publicsuffix.DefaultRule}
)

// rowOf returns the index row of a response or revisit record with an
// http(s) target; false for other records and for a record whose offset
// or length do not fit the columns' 32 bits.
func rowOf(rec *record, filename, crawl string) (Row, bool) {
	if (rec.typ != gowarc.Response && rec.typ != gowarc.Revisit) || rec.payload == nil {
		return Row{}, false
	}
	if rec.offset > math.MaxInt32 || rec.size > math.MaxInt32 {
		return Row{}, false
	}
	target := rec.header.Get(gowarc.WarcTargetURI)
	u, err := urlx.Parse(target)
	if err != nil {
		return Row{}, false
	}
	date, _ := time.Parse(time.RFC3339Nano, rec.header.Get(gowarc.WarcDate))
	p := rec.payload
	row := Row{
		URLSurtKey:       store.SURT(target),
		URL:              target,
		URLHostName:      u.Host,
		URLProtocol:      u.Scheme,
		FetchTime:        date.UTC(),
		FetchStatus:      int16(p.Status),
		ContentDigest:    strings.TrimPrefix(rec.header.Get(gowarc.WarcPayloadDigest), "sha1:"),
		ContentTruncated: rec.header.Get(gowarc.WarcTruncated),
		WARCFilename:     filename,
		WARCRecordOffset: int32(rec.offset),
		WARCRecordLength: int32(rec.size),
		Crawl:            crawl,
	}
	if u.Port != "" {
		if n, err := strconv.Atoi(u.Port); err == nil {
			port := int32(n)
			row.URLPort = &port
		}
	}
	path, query, _ := strings.Cut(u.PathQuery, "?")
	row.URLPath, row.URLQuery = path, query
	hostParts(&row, u.Host)
	if mt, _, err := mime.ParseMediaType(rec.contentType()); err == nil {
		row.ContentMimeType = mt
	}
	if p.Status >= 300 && p.Status < 400 {
		if loc := p.Header.Get("Location"); loc != "" {
			if r, err := u.Resolve(loc); err == nil {
				row.FetchRedirect = r.String()
			} else {
				row.FetchRedirect = loc
			}
		}
	}
	if rec.typ == gowarc.Response && len(p.Body) > 0 {
		mt, _, _ := strings.Cut(http.DetectContentType(p.Body), ";")
		row.ContentMimeDetected = mt
	}
	if pg := rec.page; pg != nil {
		row.ContentCharset = strings.ToUpper(pg.charset)
		h := int64(pg.simHash)
		row.ContentSimHash = &h
		row.ContentLanguages = pg.langs
	}
	row.Subset = subset(path, p.Status)
	return row, true
}

// subset is Common Crawl's subset of a capture: robotstxt, warc (a
// success) or crawldiagnostics (redirects, errors).
func subset(path string, status int) string {
	switch {
	case path == "/robots.txt":
		return "robotstxt"
	case status >= 200 && status < 300:
		return "warc"
	}
	return "crawldiagnostics"
}

// hostParts fills the url_host_* columns of host. An IP address has none
// but its name.
func hostParts(row *Row, host string) {
	h := strings.TrimSuffix(host, ".")
	if h == "" || h[0] == '[' || strings.Trim(h, "0123456789.") == "" {
		return
	}
	labels := strings.Split(h, ".")
	part := func(i int) string { // i-th label from the end, 1-based
		if i <= len(labels) {
			return labels[len(labels)-i]
		}
		return ""
	}
	row.URLHostTLD = part(1)
	row.URLHost2ndLastPart, row.URLHost3rdLastPart = part(2), part(3)
	row.URLHost4thLastPart, row.URLHost5thLastPart = part(4), part(5)
	rev := make([]string, len(labels))
	for i, l := range labels {
		rev[len(labels)-1-i] = l
	}
	row.URLHostNameReversed = strings.Join(rev, ".")
	if d, err := publicsuffix.ParseFromListWithOptions(publicsuffix.DefaultList, h, icannOnly); err == nil && d != nil {
		row.URLHostRegistrySuffix = d.TLD
		if d.SLD != "" {
			row.URLHostRegisteredDomain = d.SLD + "." + d.TLD
		}
	}
	if d, err := publicsuffix.ParseFromListWithOptions(publicsuffix.DefaultList, h, withPriv); err == nil && d != nil {
		row.URLHostPrivateSuffix = d.TLD
		if d.SLD != "" {
			row.URLHostPrivateDomain = d.SLD + "." + d.TLD
		}
	}
}
