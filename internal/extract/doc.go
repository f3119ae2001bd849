// Package extract finds a page's main text: the content a reader came for,
// without navigation, boilerplate, comments and footers, with its title and
// its headings, paragraphs, list items, table rows, quotations and code
// kept apart as Blocks (rendered as Markdown by Doc.Markdown, as plain text
// by Doc.Text).
//
// Method. One pass of the crawler's scanner (parse.Tokens) cuts the page
// into blocks of text at block-level elements, dropping what a reader never
// sees (script, style, templates, forms' controls, elements hidden by the
// hidden attribute, aria-hidden or an inline display:none) and marking the
// blocks under elements that are boilerplate by name (nav, aside, footer,
// header, menus) or by an ARIA role or a class or id (nav, menu, footer,
// sidebar, comment, share, related, ad ...). The block-level elements that
// hold blocks (div, section, article, main, td, lists ...) are containers:
// since blocks come in document order, each container holds a contiguous
// run of them. Then, as Readability does, each substantial block votes for
// the containers above it (a score from its length and commas, shared out
// to its container, half to the next one up, less further up), a
// container's score is weighted by its tag and its class and id and scaled
// by the share of its text that is not link text, and the best container
// and those of its siblings that scored near it make the main text.
// Within it, boilerplate blocks, containers that are mostly links or
// negatively named, and blocks that are mostly links are dropped.
//
// Cost: the pass allocates the blocks' text and little else; the scoring is
// linear in blocks. The figures (precision, recall and F1 on the
// Scrapinghub article-extraction benchmark, CPU per page) are in
// BENCHMARKS.md and docs/datasets-text.md; `petrel bench extract`
// reproduces them (bench.go, score.go).
//
// Files:
//   - extract.go: Doc, Block, MainText and the renderings.
//   - blocks.go: the pass that cuts a page into blocks and containers.
//   - classes.go: what a container's class, id and role say of it (the
//     words of every list found in one walk of a value).
//   - choose.go: scoring the containers and choosing the main text.
//   - score.go: the benchmark's token-shingle precision and recall.
//   - bench.go: RunBench, the article-extraction benchmark.
//   - bench_readability.go (build tag petrelbench): go-readability as a
//     baseline beside it.
package extract
