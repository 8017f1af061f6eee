package describe

import (
	_ "embed"
	"encoding/json"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/dubbogo-lb/lb/internal/lblog"
)

//go:embed page.html
var page []byte

// HandlerOptions configure the live page's handler. The zero value answers
// requests for loopback names only.
type HandlerOptions struct {
	// AllowedHosts are the names or addresses (ports ignored, case too)
	// the handler answers requests for (the Host header) besides the
	// loopback ones: those under which the page is reached when it
	// listens beyond loopback. Any other Host gets 403 (DNS rebinding).
	AllowedHosts []string
}

// Handler serves the live page of r with the zero HandlerOptions: see
// HandlerWith.
func (r *Registry) Handler() http.Handler { return r.HandlerWith(HandlerOptions{}) }

// HandlerWith serves the live page of r: an HTML page (embedded, nothing
// fetched from elsewhere) that charts each provider's share of the picks
// and its weight every second, and at lb.json the Snapshot bounded by
// Bound, or with ?method=M (and optionally service, offset, limit) a page
// of M's providers (400 for a malformed offset or limit). Mount it at any
// path ending in "/", e.g.
//
//	http.Handle("/lb/", http.StripPrefix("/lb", describe.Default.Handler()))
//
// It answers GET and HEAD only (405 otherwise), for a Host that is
// loopback or in opts.AllowedHosts only (403 otherwise); every response
// forbids sniffing, framing and caching. Should marshalling fail, the
// answer is a bare 500.
func (r *Registry) HandlerWith(opts HandlerOptions) http.Handler {
	allowed := map[string]bool{}
	for _, h := range opts.AllowedHosts {
		if h = hostname(h); h != "" {
			allowed[h] = true
		}
	}
	var warned atomic.Bool
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		hdr := w.Header()
		hdr.Set("Cache-Control", "no-store")
		hdr.Set("X-Content-Type-Options", "nosniff")
		hdr.Set("Content-Security-Policy", "frame-ancestors 'none'")
		if h := hostname(req.Host); !loopback(h) && !allowed[h] {
			http.Error(w, "forbidden host", http.StatusForbidden)
			return
		}
		if req.Method != http.MethodGet && req.Method != http.MethodHead {
			hdr.Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		switch p := req.URL.Path; {
		case strings.HasSuffix(p, "/lb.json") || p == "lb.json":
			page, ok := pageOf(req.URL.Query())
			if !ok {
				http.Error(w, "bad offset or limit", http.StatusBadRequest)
				return
			}
			body, err := json.MarshalIndent(Bound(r.Snapshot(), page), "", "  ")
			if err != nil {
				if warned.CompareAndSwap(false, true) {
					lblog.Warnf("live page: the snapshot does not marshal to JSON (logged once): %v", err)
				}
				http.Error(w, "internal error", http.StatusInternalServerError)
				return
			}
			hdr.Set("Content-Type", "application/json")
			_, _ = w.Write(append(body, '\n'))
		case p == "" || strings.HasSuffix(p, "/") || strings.HasSuffix(p, "/index.html"):
			hdr.Set("Content-Type", "text/html; charset=utf-8")
			_, _ = w.Write(page)
		default:
			http.NotFound(w, req)
		}
	})
}

// pageOf reads a Page from lb.json's query: service, method, offset and
// limit (non-negative integers); ok is false for a malformed number.
func pageOf(q url.Values) (p Page, ok bool) {
	p.Service, p.Method = q.Get("service"), q.Get("method")
	for _, f := range []struct {
		key string
		to  *int
	}{{"offset", &p.Offset}, {"limit", &p.Limit}} {
		if v := q.Get(f.key); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return p, false
			}
			*f.to = n
		}
	}
	return p, true
}

// hostname returns the host of hostport (a name, an IPv4 address or an
// IPv6 address, bracketed or bare, with or without a port), lower-case,
// without a trailing dot; "" when there is none.
func hostname(hostport string) string {
	h := strings.TrimSpace(hostport)
	switch {
	case strings.HasPrefix(h, "["):
		end := strings.IndexByte(h, ']')
		if end < 0 {
			return ""
		}
		h = h[1:end]
	case strings.Count(h, ":") == 1:
		h = h[:strings.IndexByte(h, ':')]
	}
	return strings.TrimSuffix(strings.ToLower(h), ".")
}

// Loopback reports whether hostport, a host with or without a port (a
// Host header, a listening address), names this host's loopback interface:
// localhost, an address of 127.0.0.0/8 or [::1]. An empty host (every
// interface) is not loopback.
func Loopback(hostport string) bool { return loopback(hostname(hostport)) }

// loopback is Loopback of h, from hostname.
func loopback(h string) bool {
	if h == "localhost" {
		return true
	}
	a, err := netip.ParseAddr(h)
	return err == nil && a.Zone() == "" && a.Unmap().IsLoopback()
}
