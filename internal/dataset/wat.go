package dataset

import (
	"bytes"
	"strconv"
	"strings"

	gowarc "github.com/nlnwa/gowarc/v3"

	"github.com/petrel-crawler/petrel/internal/parse"
	"github.com/petrel-crawler/petrel/internal/store"
)

// appendWATJSON appends to b the WAT metadata of rec, as Common Crawl's
// WAT files (ia-web-commons' extractor) give it: Container, then Envelope
// with the WARC header fields and the Payload-Metadata of the block.
func appendWATJSON(b []byte, rec *record, filename string) []byte {
	var container obj
	container.add("Filename", filename)
	container.add("Compressed", rec.compressed)
	container.add("Offset", strconv.FormatInt(rec.offset, 10))
	var env obj
	env.add("Format", "WARC")
	env.add("WARC-Header-Length", strconv.Itoa(rec.headerLen))
	env.add("Block-Digest", rec.blockDigest())
	env.add("Actual-Content-Length", strconv.FormatInt(rec.blockLen, 10))
	var wh obj
	for _, nv := range *rec.header {
		wh.accumulate(nv.Name, nv.Value, false)
	}
	env.add("WARC-Header-Metadata", wh)
	env.add("Payload-Metadata", payloadMetadata(rec))
	var top obj
	top.add("Container", container)
	top.add("Envelope", env)
	return top.appendJSON(b)
}

// payloadMetadata describes the block of rec by its kind.
func payloadMetadata(rec *record) obj {
	var pm obj
	switch {
	case rec.typ == gowarc.Warcinfo:
		pm.add("Actual-Content-Type", "application/warc-fields")
		pm.add("WARC-Info-Metadata", fieldsObj(rec.block))
	case rec.typ == gowarc.Metadata && strings.HasPrefix(rec.header.Get("Content-Type"), "application/warc-fields"):
		pm.add("Actual-Content-Type", "application/metadata-fields")
		var list []obj
		for _, l := range lines(rec.block) {
			if k, v, ok := strings.Cut(l, ":"); ok {
				list = append(list, obj{{"Name", strings.TrimSpace(k)}, {"Value", strings.TrimSpace(v)}})
			}
		}
		pm.add("WARC-Metadata-Metadata", obj{{"Metadata-Records", list}})
	case rec.typ == gowarc.Request && rec.isHTTP():
		pm.add("Actual-Content-Type", "application/http; msgtype=request")
		pm.add("HTTP-Request-Metadata", httpMetadata(rec, "Request-Message", requestMessage))
	case (rec.typ == gowarc.Response || rec.typ == gowarc.Revisit) && rec.isHTTP():
		pm.add("Actual-Content-Type", "application/http; msgtype=response")
		hm := httpMetadata(rec, "Response-Message", responseMessage)
		if rec.page != nil && rec.page.html != nil {
			hm.add("HTML-Metadata", rec.page.html)
		}
		pm.add("HTTP-Response-Metadata", hm)
	default:
		pm.addNonEmpty("Actual-Content-Type", rec.header.Get("Content-Type"))
	}
	return pm
}

// httpMetadata describes an HTTP message's header and entity.
func httpMetadata(rec *record, msgKey string, message func(string) obj) obj {
	head := rec.httpHeader()
	first, rest, _ := strings.Cut(string(head), "\n")
	var hm obj
	hm.add(msgKey, message(strings.TrimRight(first, "\r")))
	hm.add("Headers", headerObj(rest))
	hm.add("Headers-Length", strconv.Itoa(len(head)))
	hm.add("Entity-Length", strconv.FormatInt(rec.blockLen-int64(len(head)), 10))
	hm.add("Entity-Trailing-Slop-Length", "0")
	hm.addNonEmpty("Entity-Digest", rec.header.Get(gowarc.WarcPayloadDigest))
	return hm
}

// responseMessage splits "HTTP/1.1 200 OK".
func responseMessage(line string) obj {
	version, rest, _ := strings.Cut(line, " ")
	status, reason, _ := strings.Cut(rest, " ")
	return obj{{"Status", status}, {"Version", version}, {"Reason", reason}}
}

// requestMessage splits "GET /path HTTP/1.1".
func requestMessage(line string) obj {
	method, rest, _ := strings.Cut(line, " ")
	path, version, _ := strings.Cut(rest, " ")
	return obj{{"Method", method}, {"Path", path}, {"Version", version}}
}

// headerObj returns the header fields of the lines in block, in order: a
// field given more than once is a list of its values, as Common Crawl
// writes repeated headers since its December 2024 crawl.
func headerObj(block string) obj {
	var o obj
	for _, l := range lines([]byte(block)) {
		if k, v, ok := strings.Cut(l, ":"); ok {
			o.accumulate(strings.TrimSpace(k), strings.TrimSpace(v), true)
		}
	}
	return o
}

// accumulate adds key: value to o, as ia-web-commons' MetaData does: a
// key already there gets a list of its values. fold compares keys in any
// ASCII case (HTTP field names).
func (o *obj) accumulate(key, value string, fold bool) {
	for i := range *o {
		m := &(*o)[i]
		if m.key != key && !(fold && strings.EqualFold(m.key, key)) {
			continue
		}
		switch prev := m.value.(type) {
		case string:
			m.value = []string{prev, value}
		case []string:
			m.value = append(prev, value)
		}
		return
	}
	o.add(key, value)
}

// fieldsObj returns application/warc-fields as an object (a repeated
// field: its last value).
func fieldsObj(block []byte) obj {
	var o obj
	for _, l := range lines(block) {
		if k, v, ok := strings.Cut(l, ":"); ok {
			o.add(strings.TrimSpace(k), strings.TrimSpace(v))
		}
	}
	return o
}

// lines splits b into its lines without their line breaks, empty ones
// left out.
func lines(b []byte) []string {
	var out []string
	for l := range bytes.Lines(b) {
		if s := strings.TrimRight(string(l), "\r\n"); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// htmlMetadata is WAT's HTML-Metadata of a parsed page: Head (Title, Base,
// Metas, Link, Scripts) and Links, and Petrel's SimHash of the page's
// text (16 hexadecimal digits) with the shingles behind it.
func htmlMetadata(pg *Page, m *parse.PageMeta) obj {
	var head obj
	head.addNonEmpty("Title", pg.title)
	head.addNonEmpty("Base", m.Base)
	addFields(&head, "Metas", m.Metas)
	addFields(&head, "Link", m.LinkTags)
	addFields(&head, "Scripts", m.Scripts)
	var hm obj
	hm.add("Head", head)
	addFields(&hm, "Links", m.Links)
	hm.add("SimHash", simhashHex(pg.simHash))
	hm.add("SimHash-Shingles", strconv.Itoa(pg.shingles))
	return hm
}

// addFields adds key: the list of elements, unless it is empty, rendered
// at once (a page has hundreds of them).
func addFields(o *obj, key string, list []parse.Fields) {
	if len(list) == 0 {
		return
	}
	b := make(rawJSON, 0, 64*len(list))
	b = append(b, '[')
	for i, f := range list {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '{')
		for j := 0; j+1 < len(f); j += 2 {
			if j > 0 {
				b = append(b, ',')
			}
			b = store.AppendJSONString(b, f[j])
			b = append(b, ':')
			b = store.AppendJSONString(b, f[j+1])
		}
		b = append(b, '}')
	}
	o.add(key, append(b, ']'))
}

// simhashHex formats a SimHash as 16 lower-case hexadecimal digits.
func simhashHex(h uint64) string {
	s := strconv.FormatUint(h, 16)
	return strings.Repeat("0", 16-len(s)) + s
}
