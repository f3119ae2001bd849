package testweb

import "strings"

// LinkShare counts the links of the normal web's pages: all of them, and
// those whose target is on another host than the page's (cross-host). In
// a crawl of several agents a cross-host link is the one that may have to
// cross to another agent: its target's key can have another owner.
func (w *Web) LinkShare() (cross, all int) {
	for _, s := range w.sites {
		prefix := s.origin + "/"
		for _, res := range s.res {
			for _, l := range res.links {
				all++
				if !strings.HasPrefix(l, prefix) {
					cross++
				}
			}
		}
	}
	return cross, all
}
