package extract

import (
	"fmt"
	"os"
	"testing"

	"github.com/petrel-crawler/petrel/internal/parse"
)

func TestZZStack(t *testing.T) {
	f := os.Getenv("PAGE")
	if f == "" {
		t.Skip()
	}
	b, _ := readGzip(f)
	var p pass
	p.toks.Reset(b)
	for {
		switch p.toks.Next() {
		case parse.EOF:
			return
		case parse.Text:
			p.text()
		case parse.StartTag:
			p.start()
		case parse.EndTag:
			p.end()
		}
		if len(p.blocks) > 0 && p.blocks[len(p.blocks)-1].chars > 150 {
			for _, e := range p.stack {
				fmt.Printf("%s:%v:%v ", e.name, e.boiler, e.node)
				if e.node == 77 {
					fmt.Printf("%+v\n", p.nodes[77])
				}
			}
			fmt.Println()
			return
		}
	}
}
