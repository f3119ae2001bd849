package crawllog

import (
	"fmt"

	"github.com/petrel-crawler/petrel/internal/settings"
)

// Settings are the line logs' settings of a crawl, declared in Table.
type Settings struct {
	Write             bool  // write the logs (false: the crawl only counts)
	MaxFileBytes      int64 // crawl.log rotates past this
	SkippedFileBytes  int64 // skipped.jsonl rotates past this
	SkippedTotalBytes int64 // cap of skipped.jsonl and its rotated files
}

// Table declares the logs' settings, bound to s.
func (s *Settings) Table() settings.Table {
	const open = "the logs are opened with it"
	return settings.Table{
		settings.Bool(&s.Write, "crawl-log", true,
			"write logs/crawl.log and logs/skipped.jsonl (off: fetches and refusals are only counted, and why finds no refusal per URL)").
			In(settings.Operations).SetFixed(open),
		settings.Size(&s.MaxFileBytes, "crawl-log-max-bytes", DefaultMaxFileBytes,
			"logs/crawl.log rotates past this (to crawl.log.1, .2, …)").
			In(settings.Operations).AtLeast(int64(4096)).SetFixed(open),
		settings.Size(&s.SkippedFileBytes, "skipped-max-bytes", DefaultSkippedFileBytes,
			"logs/skipped.jsonl rotates past this").
			In(settings.Operations).AtLeast(int64(4096)).SetFixed(open),
		settings.Size(&s.SkippedTotalBytes, "skipped-total-bytes", DefaultSkippedTotalBytes,
			"cap of logs/skipped.jsonl with its rotated files; refusals past it are counted, not written").
			In(settings.Operations).AtLeast(int64(4096)).SetFixed(open).
			Check(func() error {
				if s.SkippedTotalBytes < s.SkippedFileBytes {
					return fmt.Errorf("must be at least --skipped-max-bytes (%d)", s.SkippedFileBytes)
				}
				return nil
			}),
	}
}

// Options returns the Options of a Log in dir with these settings.
func (s *Settings) Options(dir string) Options {
	return Options{Dir: dir, Off: !s.Write, MaxFileBytes: s.MaxFileBytes, SkippedFileBytes: s.SkippedFileBytes, SkippedTotalBytes: s.SkippedTotalBytes}
}
