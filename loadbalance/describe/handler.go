package describe

import (
	_ "embed"
	"encoding/json"
	"net/http"
	"strings"
)

//go:embed page.html
var page []byte

// Handler serves the live page of r: an HTML page (embedded, nothing
// fetched from elsewhere) that charts each provider's share of the picks
// and its weight, updated every second, beside the JSON, which it serves
// at lb.json. Mount it at any path ending in "/", e.g.
//
//	http.Handle("/lb/", http.StripPrefix("/lb", describe.Default.Handler()))
func (r *Registry) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		switch p := req.URL.Path; {
		case strings.HasSuffix(p, "/lb.json") || p == "lb.json":
			body, err := json.MarshalIndent(r.Snapshot(), "", "  ")
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(append(body, '\n'))
		case p == "" || strings.HasSuffix(p, "/") || strings.HasSuffix(p, "/index.html"):
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_, _ = w.Write(page)
		default:
			http.NotFound(w, req)
		}
	})
}
