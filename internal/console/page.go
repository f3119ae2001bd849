package console

import (
	"embed"
	"html/template"
	"net/http"
	"path"
)

//go:embed assets
var assets embed.FS

var pageTmpl = template.Must(template.ParseFS(assets, "assets/index.html"))

// page serves the console's shell: no crawl data and never the token (the
// script fetches everything from the API).
func (s *Server) page(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	pageTmpl.Execute(w, map[string]any{"Addr": s.Addr(), "Loopback": s.gate.loopback})
}

var assetTypes = map[string]string{
	".js":  "text/javascript; charset=utf-8",
	".css": "text/css; charset=utf-8",
	".svg": "image/svg+xml",
}

func (s *Server) asset(w http.ResponseWriter, r *http.Request) {
	b, err := assets.ReadFile("assets" + r.URL.Path)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", assetTypes[path.Ext(r.URL.Path)])
	w.Write(b)
}
