package sieve

import "github.com/petrel-crawler/petrel/internal/settings"

// Settings are the sieve's and the URL cache's settings of a crawl,
// declared in Table.
type Settings struct {
	URLCacheBytes int // RAM of the cache of recently seen URLs
	BufferKeys    int // keys buffered in RAM between flushes
}

// Table declares the sieve's settings, bound to s.
func (s *Settings) Table() settings.Table {
	return settings.Table{
		settings.Size(&s.URLCacheBytes, "url-cache-bytes", 64<<20, "RAM of the cache of recently seen URLs").
			In(settings.Limits).Range(0, 1<<40).SetFixed("the cache's table is allocated at the start"),
		settings.Count(&s.BufferKeys, "sieve-buffer", 1<<20, "keys buffered in RAM by the sieve between flushes").
			In(settings.Limits).Range(1, 1<<30).SetFixed("the sieve's buffers are allocated at the start"),
	}
}
