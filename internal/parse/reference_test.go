package parse

// The reference walk: the extractor's pass with golang.org/x/net/html's
// Tokenizer, as it was before scan.go replaced it on the hot path. The
// differential tests hold HTML to the Result htmlReference gives.

import (
	"bytes"
	"net/http"

	"golang.org/x/net/html"

	"github.com/petrel-crawler/petrel/internal/urlx"
)

// htmlReference is HTML with the reference walk.
func htmlReference(base urlx.URL, header http.Header, body []byte, opts Options) Result {
	var x extractor
	text := x.begin(base, header, body, opts)
	x.runTokenizer(text)
	return x.finish()
}

// runTokenizer is the reference walk of text.
func (x *extractor) runTokenizer(text []byte) {
	z := html.NewTokenizer(bytes.NewReader(text))
	skipText := false // inside <script> or <style>
	var nameBuf [16]byte
	after := afterOther
	for {
		tt := z.Next()
		prev := after
		after = afterOther
		switch tt {
		case html.ErrorToken:
			return // io.EOF: the reader cannot fail otherwise
		case html.TextToken:
			t := z.Text()
			if prev == afterStyle && x.embeds {
				x.styleSheet(t)
			}
			if prev == afterScript && x.inScript {
				x.scriptLiterals(t)
			}
			if prev == afterTitle && !x.titled {
				x.titled = true
				x.titleText(t)
			}
			if !skipText {
				feedText(&x.dig, &x.sim, t)
			}
		case html.StartTagToken, html.SelfClosingTagToken:
			name := tagName(z, &nameBuf)
			src := x.startTagTokenizer(z, name)
			x.dig.tag(false, name, src)
			x.sim.endWord()
			if tt == html.StartTagToken {
				switch string(name) {
				case "script", "style":
					skipText = true
				}
			}
			after = afterTag(name)
		case html.EndTagToken:
			x.dig.tag(true, tagName(z, &nameBuf), nil)
			x.sim.endWord()
			skipText = false
		}
	}
}

// tagName returns the lower-cased name of the current tag token. It reads
// the name from the raw token into buf, avoiding the copy that
// Tokenizer.TagName makes, and falls back to TagName for long names or names
// holding NUL or non-ASCII bytes.
func tagName(z *html.Tokenizer, buf *[16]byte) []byte {
	raw := z.Raw()
	i := 1 // skip '<'
	if i < len(raw) && raw[i] == '/' {
		i++
	}
	n := 0
	for ; i < len(raw); i++ {
		c := raw[i]
		if isSpace(c) || c == '/' || c == '>' {
			break
		}
		if c == 0 || c >= 0x80 || n == len(buf) {
			name, _ := z.TagName()
			return name
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[n] = c
		n++
	}
	return buf[:n]
}

// tokenAttrs replays the attributes of a start tag, read once from the
// Tokenizer, as TagAttr gives them.
type tokenAttrs struct {
	kv [][2][]byte
	i  int
}

// TagAttr is html.Tokenizer.TagAttr over the recorded attributes.
func (a *tokenAttrs) TagAttr() (k, v []byte, more bool) {
	if a.i == len(a.kv) {
		return nil, nil, false
	}
	kv := a.kv[a.i]
	a.i++
	return kv[0], kv[1], a.i < len(a.kv)
}

// startTagTokenizer handles the attributes of a start tag and returns the src
// attribute of a frame or iframe (for the digest).
func (x *extractor) startTagTokenizer(tz *html.Tokenizer, name []byte) (src []byte) {
	var all tokenAttrs
	for more := true; more; {
		k, v, m := tz.TagAttr()
		more = m
		if k != nil || v != nil {
			all.kv = append(all.kv, [2][]byte{k, v})
		}
	}
	src = x.startTagLinks(&all, name)
	if x.embeds || string(name) == "link" {
		var e embedAttrs
		for _, kv := range all.kv {
			if k := embedAttrKey(kv[0]); k >= 0 {
				e.set(k, kv[1])
			}
		}
		x.requisites(name, &e)
	}
	return src
}

// startTagLinks handles the links, base and meta of a start tag.
func (x *extractor) startTagLinks(z *tokenAttrs, name []byte) (src []byte) {
	switch string(name) {
	case "a", "area":
		var href []byte
		found, nofollow := false, false
		for more := true; more; {
			var k, v []byte
			k, v, more = z.TagAttr()
			switch string(k) {
			case "href":
				if !found {
					href, found = v, true
				}
			case "rel":
				nofollow = nofollow || hasToken(v, "nofollow")
			}
		}
		if !found {
			return nil
		}
		if nofollow {
			x.res.NoFollowLinks++
			return nil
		}
		x.link(href)
	case "frame", "iframe":
		for more := true; more; {
			var k, v []byte
			k, v, more = z.TagAttr()
			if string(k) == "src" && src == nil {
				src = v
				x.link(v)
			}
		}
	case "base":
		for more := true; more; {
			var k, v []byte
			k, v, more = z.TagAttr()
			if string(k) == "href" && !x.baseSet {
				x.baseSet = true // only the first <base href> counts
				if b, err := x.base.Resolve(string(v)); err == nil {
					x.base = b
				}
			}
		}
	case "meta":
		var nameAttr, equiv, content []byte
		hasContent := false
		for more := true; more; {
			var k, v []byte
			k, v, more = z.TagAttr()
			switch string(k) {
			case "name":
				nameAttr = v
			case "http-equiv":
				equiv = v
			case "content":
				content, hasContent = v, true
			}
		}
		if !hasContent {
			return nil
		}
		x.meta(nameAttr, equiv, content)
	}
	return src
}
