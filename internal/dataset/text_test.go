package dataset

import (
	"strings"
	"testing"

	"github.com/petrel-crawler/petrel/internal/store"
)

// articlePage is an HTML page with a menu, an article of paragraphs and a
// footer.
func articlePage(title string, paras ...string) string {
	var b strings.Builder
	b.WriteString(`<!doctype html><html><head><meta charset="utf-8"><title>` + title + `</title></head><body>
<nav><ul><li><a href="/">Home</a></li><li><a href="/news">News</a></li><li><a href="/contact">Contact</a></li></ul></nav>
<main><article><h1>` + title + `</h1>`)
	for _, p := range paras {
		b.WriteString("<p>" + p + "</p>\n")
	}
	b.WriteString(`</article></main><footer><p>Copyright Example Media, all rights reserved</p></footer></body></html>`)
	return b.String()
}

var (
	englishPage = articlePage("The harbour in winter",
		"The old harbour is quiet in winter, when the fishing boats stay moored and the cafés along the quay close early in the evening.",
		"Most of the people who still work there repair nets, paint hulls and prepare the boats for the spring, when the herring come back to the coast.",
		"Visitors who come in the cold months find long walks on the empty beaches, fresh bread in the morning and a warm welcome in the few inns that stay open.")
	frenchPage = articlePage("Le port en hiver",
		"Le vieux port est calme en hiver, quand les bateaux de pêche restent amarrés et que les cafés du quai ferment tôt le soir.",
		"La plupart des gens qui y travaillent encore réparent les filets, repeignent les coques et préparent les bateaux pour le printemps, quand les harengs reviennent sur la côte.",
		"Les visiteurs qui viennent pendant les mois froids trouvent de longues promenades sur les plages désertes, du pain frais le matin et un accueil chaleureux dans les auberges.")
	// menuPage has no main text: only a menu.
	menuPage = `<html><head><title>Menu</title></head><body><nav><a href="/a">Home</a> <a href="/b">News</a></nav></body></html>`
)

// TestConvertMainTextLanguages converts an English page, a French page and
// a page that is only a menu: the WET records hold the pages' main text
// (no menu, no footer) or, without one, the visible text, and carry the
// languages found in it, as do the index rows.
func TestConvertMainTextLanguages(t *testing.T) {
	warc := writeExchanges(t, t.TempDir(), []store.Exchange{
		{TargetURI: "http://en.example.com/", Response: htmlResponse("200 OK", "", englishPage)},
		{TargetURI: "http://fr.example.com/", Response: htmlResponse("200 OK", "", frenchPage)},
		{TargetURI: "http://menu.example.com/", Response: htmlResponse("200 OK", "", menuPage)},
	})
	res, err := Convert(warc, Options{WET: true, Rows: true})
	if err != nil || res.Texts != 3 || len(res.Rows) != 3 {
		t.Fatalf("%+v, %v", res, err)
	}
	headers, blocks := readWARC(t, WETName(warc))
	wet := map[string]string{}
	wetLangs := map[string]string{}
	for i, h := range headers[1:] {
		u := h.Get("WARC-Target-URI")
		wet[u], wetLangs[u] = string(blocks[i+1]), h.Get("WARC-Identified-Content-Language")
	}
	rowLangs := map[string]string{}
	for _, r := range res.Rows {
		rowLangs[r.URL] = r.ContentLanguages
	}
	for u, want := range map[string]string{"http://en.example.com/": "eng", "http://fr.example.com/": "fra"} {
		if wetLangs[u] != want || rowLangs[u] != want {
			t.Errorf("%s: WET language %q, index %q, want %q", u, wetLangs[u], rowLangs[u], want)
		}
		text := wet[u]
		if strings.Contains(text, "Contact") || strings.Contains(text, "Copyright") {
			t.Errorf("%s: WET text keeps the menu or the footer: %q", u, text)
		}
	}
	if want := "The harbour in winter\n\nThe old harbour is quiet in winter,"; !strings.HasPrefix(wet["http://en.example.com/"], want) {
		t.Errorf("WET text %q, want it to begin %q", wet["http://en.example.com/"], want)
	}
	if got := wet["http://menu.example.com/"]; got != "Menu\nHome News\n" {
		t.Errorf("page without main text: WET text %q, want its visible text", got)
	}
}

// TestConvertTextAll: with TextAll the WET record has the whole page's
// visible text, menu and footer included.
func TestConvertTextAll(t *testing.T) {
	warc := writeExchanges(t, t.TempDir(), []store.Exchange{
		{TargetURI: "http://en.example.com/", Response: htmlResponse("200 OK", "", englishPage)},
	})
	if _, err := Convert(warc, Options{WET: true, Text: TextAll}); err != nil {
		t.Fatal(err)
	}
	headers, blocks := readWARC(t, WETName(warc))
	text := string(blocks[1])
	if !strings.HasPrefix(text, "The harbour in winter\nHome\nNews\nContact\n") || !strings.HasSuffix(text, "Copyright Example Media, all rights reserved\n") {
		t.Errorf("WET text %q", text)
	}
	if l := headers[1].Get("WARC-Identified-Content-Language"); l != "eng" {
		t.Errorf("language %q", l)
	}
	if _, err := Convert(warc, Options{WET: true, Text: "most"}); err == nil || !strings.Contains(err.Error(), `text "most"`) {
		t.Errorf("an unknown text form: %v", err)
	}
}
