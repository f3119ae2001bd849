package extract

import (
	"fmt"
	"os"
	"sort"
	"testing"
)

func TestZZDebug(t *testing.T) {
	f := os.Getenv("PAGE")
	if f == "" {
		t.Skip()
	}
	b, _ := readGzip(f)
	var p pass
	p.run(b)
	tot := p.totals(3)
	sc := p.votes(3)
	type ns struct {
		i int
		s float64
	}
	var l []ns
	for i := range p.nodes {
		if sc[i] != 0 {
			l = append(l, ns{i, sc[i] * (1 - tot[i].linkDensity())})
		}
	}
	sort.Slice(l, func(a, b int) bool { return l[a].s > l[b].s })
	for _, x := range l[:min(8, len(l))] {
		n := p.nodes[x.i]
		fmt.Printf("node %d parent %d score %.1f w %d blocks %d-%d chars %d links %d\n", x.i, n.parent, x.s, n.weight, n.first, n.end, tot[x.i].chars, tot[x.i].links)
	}
	fmt.Println("blocks", len(p.blocks), "nodes", len(p.nodes))
	for i, bl := range p.blocks {
		if os.Getenv("ALL") != "" || bl.chars > 100 {
			fmt.Printf("%d n%d b%v k%d c%d l%d %.80q\n", i, bl.node, bl.boiler, bl.Kind, bl.chars, bl.links, bl.Text)
		}
	}
}
