package store

import "github.com/petrel-crawler/petrel/internal/settings"

// Settings are the WARC store's settings of a crawl, declared in Table.
type Settings struct {
	MaxFileBytes int64 // WARC files rotate after this many bytes
	GzipLevel    int   // 1 (fastest) to 9
	// StoreBelow: records shorter than this many bytes are stored, not
	// compressed, in their gzip member (0: every record is compressed).
	StoreBelow int64
	// Index writes a CDXJ index beside each WARC file and, at the end, the
	// merged indexes/index.cdxj.
	Index bool
	// WAT and WET write NAME.warc.wat.gz and NAME.warc.wet.gz beside each
	// WARC file once it is closed; CCIndex writes the columnar index,
	// indexes/cc-index.parquet, at the end (package dataset).
	WAT, WET, CCIndex bool
	// WETText is what a WET record holds of its page: "main" (the main
	// text, else the visible text) or "all" (the whole page's visible
	// text); package dataset's Text.
	WETText string
	// Languages detects the languages of every HTML and text/plain page
	// as it is fetched, for its CDXJ line's languages field and its
	// crawl.log line (a filter that reads them detects them whatever
	// this says).
	Languages bool
	// DedupIndex is an earlier crawl's CDXJ index (a file, a crawl
	// directory or a directory of *.cdxj files): a 200 response whose
	// payload it lists is a revisit record referring to that capture.
	DedupIndex string
	// DedupMax bounds the payload digests read from DedupIndex.
	DedupMax int
}

// Table declares the store's settings, bound to s.
func (s *Settings) Table() settings.Table {
	const open = "the WARC writer is opened with it"
	return settings.Table{
		settings.Size(&s.MaxFileBytes, "warc-max-bytes", 1<<30, "WARC files rotate after this many bytes").
			In(settings.Storage).AtLeast(int64(64 << 10)).SetFixed(open),
		settings.Count(&s.GzipLevel, "warc-gzip-level", 1,
			"gzip level of WARC records, 1 (fastest) to 9; 6 makes files 9% smaller for a third more compression CPU").
			In(settings.Storage).Range(1, 9).SetFixed(open),
		settings.Size(&s.StoreBelow, "warc-store-below", DefaultStoreBelow,
			"records shorter than this are stored uncompressed in their gzip member (0: compress every record)").
			WithDoc("records shorter than this are stored uncompressed in their gzip member: the Huffman tables of a compressed block cost more CPU than a request record saves; 0 compresses every record").
			In(settings.Storage).Range(int64(0), int64(1<<20)).SetFixed(open),
		settings.Bool(&s.Index, "cdxj", true, "write a CDXJ index beside each WARC file, and indexes/index.cdxj at the end").
			WithDoc("write a CDXJ index beside each WARC file and the merged `indexes/index.cdxj` at the end (`--cdxj=false`: none)").
			In(settings.Storage).SetFixed(open),
		settings.Bool(&s.WAT, "wat", false, "write a WAT file (Common Crawl's JSON metadata of every record) beside each WARC file once it is closed").
			WithDoc("write `NAME.warc.wat.gz`, Common Crawl's WAT (JSON metadata of every record: headers, title, metas, links, SimHash), beside each WARC file once it is closed (docs/datasets.md)").
			In(settings.Storage).SetFixed(open),
		settings.Bool(&s.WET, "wet", false, "write a WET file (the text of every HTML page) beside each WARC file once it is closed").
			WithDoc("write `NAME.warc.wet.gz`, Common Crawl's WET (the text of every HTML page, `--wet-text`, with its languages), beside each WARC file once it is closed (docs/datasets.md)").
			In(settings.Storage).SetFixed(open),
		settings.Enum(&s.WETText, "wet-text", "main", []string{"main", "all"},
			"what a WET record holds: main (the page's main text, without menus and footers) or all (the whole page's visible text)").
			WithDoc("what a WET record holds: `main`, the page's main text (title, then headings, paragraphs, lists, tables apart, without menus and footers; the visible text when none is found), or `all`, the whole page's visible text as in Common Crawl's WET (docs/datasets.md)").
			In(settings.Storage).SetFixed(open),
		settings.Bool(&s.CCIndex, "cc-index", false, "write the columnar index indexes/cc-index.parquet (Common Crawl's cc-index-table columns) at the end").
			WithDoc("write `indexes/cc-index.parquet` at the end: Common Crawl's cc-index-table columns and `content_simhash`, one row per capture (docs/datasets.md)").
			In(settings.Storage).SetFixed(open),
		settings.Bool(&s.Languages, "languages", false, "detect each page's languages as it is fetched: the CDXJ field languages and a lang: annotation in crawl.log").
			WithDoc("detect the languages of each HTML and text/plain page as it is fetched (up to three ISO 639-3 codes, from the first 4 KiB of its text) for the `languages` field of its CDXJ line and the `lang:` annotation of its crawl.log line; off by default, as detection adds CPU to every page (BENCHMARKS.md); a filter with `LanguageIsOneOf` detects them whatever this says (docs/datasets.md)").
			In(settings.Storage).SetFixed(open),
		settings.String(&s.DedupIndex, "dedup-index", "",
			"an earlier crawl's CDXJ index (FILE, crawl DIR or DIR of *.cdxj): a 200 response whose payload it lists is stored as a revisit record referring to that capture").
			WithDoc("an earlier crawl's CDXJ index (a `.cdxj` file, a crawl directory, i.e. its `indexes/index.cdxj`, or a directory of `*.cdxj` files; Petrel's, pywb's or warcio's): a 200 response whose payload digest it lists is stored as an identical-payload-digest revisit record referring to that capture's URI and date (docs/revisits.md)").
			WithUnit("PATH").In(settings.Storage).SetFixed(open),
		settings.Count(&s.DedupMax, "dedup-index-max", DefaultDedupMax,
			"payload digests read from --dedup-index at most, about 40 bytes each plus the URL (the rest are left out, and logged)").
			In(settings.Storage).Range(1, 1<<31-1).SetFixed(open),
	}
}

// Options returns the writer's options for these settings (the other
// fields are left zero).
func (s *Settings) Options() Options {
	below := int(s.StoreBelow)
	if below == 0 {
		below = -1 // Options: negative compresses every record
	}
	return Options{MaxFileBytes: s.MaxFileBytes, GzipLevel: s.GzipLevel, StoreBelow: below, Index: s.Index}
}
