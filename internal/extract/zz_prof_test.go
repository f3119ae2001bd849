package extract

import (
	"testing"
)

func BenchmarkZZPages(b *testing.B) {
	pages, err := loadBench("/tmp/aeb")
	if err != nil {
		b.Skip()
	}
	for b.Loop() {
		for _, p := range pages {
			MainText(p.html, "")
		}
	}
}
