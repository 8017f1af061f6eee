package describe

import (
	"cmp"
	"slices"
)

// DefaultRows is the most providers per (service, method) that lb.json
// lists unless asked for a page: a method with more is summarised
// (Method.Summary) and listed by its notable providers (see Bound).
const DefaultRows = 200

// MaxRows bounds the providers of one page of lb.json (Page.Limit).
const MaxRows = 1000

// Summary is what a Method that lists only some of its providers says of
// all of them.
type Summary struct {
	// Providers is the number of providers of the method; Offset the
	// index of the first one listed, when the listing is a page (-1 when
	// it is the notable ones).
	Providers int `json:"providers"`
	Offset    int `json:"offset"`
	// States counts the providers by state.
	States map[State]int `json:"states"`
	// Zones are the figures of each zone's providers ("" for those
	// without a zone), in order of first appearance.
	Zones []ZoneSummary `json:"zones"`
}

// ZoneSummary is the sum of a zone's providers of a method.
type ZoneSummary struct {
	Zone      string  `json:"zone"`
	Providers int     `json:"providers"`
	Share     float64 `json:"share"`
	Picks     int64   `json:"picks"`
	InFlight  int64   `json:"in_flight"`
	Calls     int64   `json:"calls"`
	Failures  int64   `json:"failures"`
	// LatencyMs is the mean latency EWMA of its providers that have one.
	LatencyMs float64 `json:"latency_ms"`
}

// Page asks for some providers of the methods named: from Offset, at most
// Limit (default DefaultRows, at most MaxRows), in the order of the
// snapshot. An empty Method asks for every method, each listed by at most
// DefaultRows notable providers.
type Page struct {
	Service, Method string // Service: the service key or the interface; "" matches any
	Offset, Limit   int
}

// Bound returns s with each method's providers bounded as p asks: when p
// names no method, a method of more than DefaultRows providers lists only
// its notable ones, with its Summary; when it does, only the methods it
// names are kept, each with the providers of the page and, unless the
// page holds every provider, its Summary. s is not changed.
func Bound(s Snapshot, p Page) Snapshot {
	limit := p.Limit
	if limit <= 0 {
		limit = DefaultRows
	}
	limit = min(limit, MaxRows)
	offset := max(p.Offset, 0)
	out := s
	out.Balancers = make([]Balancer, len(s.Balancers))
	for i, b := range s.Balancers {
		methods := make([]Method, 0, len(b.Methods))
		for _, m := range b.Methods {
			switch {
			case p.Method == "":
				if len(m.Providers) > DefaultRows {
					m.Summary = summarise(&m, -1)
					m.Providers = notable(m.Providers, DefaultRows)
				}
			case m.Method != p.Method || (p.Service != "" && p.Service != m.Service && p.Service != m.Interface):
				continue
			default:
				lo, hi := min(offset, len(m.Providers)), min(offset+limit, len(m.Providers))
				if lo > 0 || hi < len(m.Providers) {
					m.Summary = summarise(&m, lo)
					m.Providers = m.Providers[lo:hi:hi]
				}
			}
			methods = append(methods, m)
		}
		out.Balancers[i] = b
		out.Balancers[i].Methods = methods
	}
	return out
}

// summarise returns the Summary of every provider of m.
func summarise(m *Method, offset int) *Summary {
	s := &Summary{Providers: len(m.Providers), Offset: offset, States: map[State]int{}}
	at := map[string]int{}
	latN := map[string]int{}
	for i := range m.Providers {
		p := &m.Providers[i]
		s.States[p.State]++
		k, ok := at[p.Zone]
		if !ok {
			k = len(s.Zones)
			at[p.Zone] = k
			s.Zones = append(s.Zones, ZoneSummary{Zone: p.Zone})
		}
		z := &s.Zones[k]
		z.Providers++
		z.Share += p.Share
		z.Picks += p.Picks
		z.InFlight += p.InFlight
		z.Calls += p.Calls
		z.Failures += p.Failures
		if p.LatencyMs > 0 {
			z.LatencyMs += p.LatencyMs
			latN[p.Zone]++
		}
	}
	for i := range s.Zones {
		if n := latN[s.Zones[i].Zone]; n > 0 {
			s.Zones[i].LatencyMs /= float64(n)
		}
		s.Zones[i].Share = finite(s.Zones[i].Share)
		s.Zones[i].LatencyMs = finite(s.Zones[i].LatencyMs)
	}
	return s
}

// notable returns at most n of ps (which has more), in their order: the
// ejected and unavailable first, then in turn the largest and the
// smallest share of the picks, the slowest and the fastest.
func notable(ps []Provider, n int) []Provider {
	keep := make([]bool, len(ps))
	kept := 0
	take := func(i int) {
		if kept < n && !keep[i] {
			keep[i] = true
			kept++
		}
	}
	for i := range ps {
		if ps[i].State == StateEjected || ps[i].State == StateUnavailable {
			take(i)
		}
	}
	byShare := make([]int, len(ps))
	for i := range byShare {
		byShare[i] = i
	}
	byLatency := slices.Clone(byShare)
	slices.SortStableFunc(byShare, func(a, b int) int { return cmp.Compare(ps[b].Share, ps[a].Share) })
	slices.SortStableFunc(byLatency, func(a, b int) int { return cmp.Compare(ps[b].LatencyMs, ps[a].LatencyMs) })
	for k := 0; kept < n && k < len(ps); k++ {
		take(byShare[k])
		take(byShare[len(ps)-1-k])
		take(byLatency[k])
		take(byLatency[len(ps)-1-k])
	}
	out := make([]Provider, 0, kept)
	for i := range ps {
		if keep[i] {
			out = append(out, ps[i])
		}
	}
	return out
}
