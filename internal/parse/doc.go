// Package parse extracts what the crawler needs from an HTML page in one
// pass of an allocation-free tokenizer (scan.go) that splits the page exactly
// as golang.org/x/net/html's Tokenizer does (no tree is built): the links to
// follow, the page requisites, the title, the robots directives, and
// BUbiNG's duplicate-content digest; and the requisites of a style sheet
// (CSS, with the small CSS tokenizer of css.go; cssfile.go); and,
// speculatively, the requisites a script names in its string literals
// (js.go: JS, IsJS). Tokens (tokens.go) lends the scanner to packages that
// read a page's structure themselves (package extract).
//
// Character encoding. The page is decoded to UTF-8 for extraction only (the
// stored body stays as received). The encoding is determined as the HTML
// standard does: byte order mark, then the charset parameter of the
// Content-Type header, then a <meta charset> or <meta http-equiv> in the
// first 1024 bytes, then a sniff (valid UTF-8 is utf-8, anything else
// windows-1252). Links and requisites are resolved as a browser resolves
// them: the path in UTF-8, the query in the document's encoding (a
// character it lacks as "%26%23N%3B"; UTF-16 documents' queries are UTF-8),
// CSS url() values always in UTF-8.
//
// Links. Followed: href of a and area, src of frame and iframe, href of a
// <link> whose rel names a document a reader goes to (canonical,
// alternate, next, prev, previous, search, author, help, license,
// copyright, start, home, first, last, up, contents, toc, index, glossary,
// appendix, chapter, section, subsection, bookmark, prefetch, prerender)
// or whose rev is made, and the URL of <meta http-equiv=refresh>. Other
// <link> relations (dns-prefetch, preconnect, pingback, webmention,
// EditURI...) name an origin or an endpoint and are not followed. The first <base href> replaces the base URL
// for the links after it, even when it points to another host. Links are
// resolved and normalised by package urlx, kept in document order without
// duplicates, and capped at Options.MaxLinks (the excess is counted in
// Result.LinksDropped; the count is of occurrences that are not duplicates of
// a kept link). Links with rel=nofollow are skipped and counted; links that
// do not parse or are not http(s) (javascript:, mailto:, data:, tel: ...) are
// counted as bad. When the page says nofollow (a robots or petrel meta tag,
// or an X-Robots-Tag header, plain or scoped to "petrel" or "robots"),
// no link is returned.
//
// Requisites (Options.Embeds; Heritrix's embeds). What a browser fetches
// to render the page: src and srcset of img and source, src and poster of
// video, src of audio, track, script and embed, data of object, src of
// input type=image, background of body, href of a <link> whose rel is
// stylesheet (an alternate style sheet too), icon, apple-touch-icon,
// apple-touch-icon-precomposed, apple-touch-startup-image, mask-icon,
// preload, modulepreload or manifest (a requisite relation wins over a
// link relation of the same <link>),
// data-src and data-srcset (lazy loading) of any element, the url()
// values and @import rules of style attributes and <style> blocks, and
// (Options.JSLiterals) the string literals of inline <script> blocks (no
// src, a JavaScript type or none) that look like requisites (see JS).
// srcset follows the HTML standard's candidate rules (invalid candidates
// are dropped, as a browser drops them). Requisites are resolved like
// links, kept in Result.Embeds in document order without duplicates (a URL
// may be both a link and a requisite), capped like links, and kept when
// the page says nofollow (they are part of the page, not links from it).
// A page without requisites costs what it cost without Options.Embeds.
//
// Title. Result.Title is the text of the first <title>, white space
// stripped and collapsed as document.title does, at most MaxTitle bytes.
//
// Digest. Result.TextDigest is a 128-bit content digest for near-duplicate
// detection, as in BUbiNG: two xxhash64 digests (different seeds) over the
// scheme and authority of the page followed by a normalised rendering of the
// page: tags by name only, attributes dropped except the src of frame and
// iframe, the text of script and style dropped, digits turned into spaces and
// white space folded (and dropped next to tags). Two pages of the same host
// that differ only in digits, white space or attributes have equal digests;
// the same page on two hosts does not.
//
// SimHash. In the same pass, Result.SimHash is a 64-bit SimHash (Charikar;
// Manku et al., "Detecting near-duplicates for web crawling") over the
// shingles of ShingleWords consecutive words of the same normalised text
// (ASCII letters lower-cased). Pages that differ in a few words have
// fingerprints a few bits apart (Hamming); unrelated pages differ in about
// 32 bits. Result.Shingles says how much text the fingerprint stands for:
// short pages make unreliable fingerprints and callers should skip them.
//
// Page metadata and text (pagemeta.go). With Options.Meta, the same pass
// fills a PageMeta with what a WAT file lists of the page (the first
// <base href>, the <meta>, <link> and <script src> elements, the links and
// embeds with their attributes as written and the anchors' text) and its
// visible text, one line per block element, for package dataset. Without
// it the pass costs what it did. With Options.MaxText the same pass keeps
// only the first MaxText bytes of the visible text, in Result.Text
// (visible.go; the crawler detects a page's languages on it).
//
// Invariants: HTML never fails and never panics on arbitrary input; every
// returned link is an absolute, normalised http or https URL.
package parse
