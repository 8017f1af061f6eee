package lbmetrics

import (
	"cmp"
	"math"
	"slices"
	"strings"
	"weak"

	prom "github.com/prometheus/client_golang/prometheus"

	"github.com/dubbogo-lb/lb/loadbalance/describe"
	"github.com/dubbogo-lb/lb/rpcstatus"
)

// maxZones bounds the zone label values of a method's series: the
// providers of further zones are counted under otherZone.
const maxZones = 16

// otherZone is the zone label of the providers beyond maxZones zones.
const otherZone = "~other"

// notableDeviation is how far from the method's mean (relative) a
// provider's share of the picks or latency must be for it to have series
// of its own above Options.MaxProviders; one that had them keeps them
// down to half that distance, so that the set does not churn on noise.
const notableDeviation = 0.5

// states are the provider states, in the order their series are sent.
var states = []describe.State{describe.StateOK, describe.StateWarming, describe.StateDrained, describe.StateEjected, describe.StateUnavailable}

// totals are the counters of one provider, or their sum over several.
type totals struct {
	picks, failures, ejections, count, elapsed int64 // elapsed in ns
	buckets                                    [rpcstatus.HistogramBuckets + 1]int64
}

// add adds the counters of s.
func (t *totals) add(s *rpcstatus.Stats) {
	t.picks += s.Picks()
	t.failures += s.Failed()
	t.ejections += s.Ejections()
	t.elapsed += int64(s.TotalElapsed())
	b, n := s.Histogram()
	t.count += n
	for i := range b {
		t.buckets[i] += b[i]
	}
}

// plus adds sign × o.
func (t *totals) plus(o *totals, sign int64) {
	t.picks += sign * o.picks
	t.failures += sign * o.failures
	t.ejections += sign * o.ejections
	t.count += sign * o.count
	t.elapsed += sign * o.elapsed
	for i := range o.buckets {
		t.buckets[i] += sign * o.buckets[i]
	}
}

// ledger is what a Collector keeps of one (service, method, balancer)
// between scrapes: the counters of the providers that left, so that the
// method's counters never go back, and the providers that had series of
// their own.
type ledger struct {
	gen     uint64                       // the last scrape that saw the method
	members map[*rpcstatus.Stats]*member // in the snapshot
	// left are those that left, counted in gone, until their statistics
	// are collected (then they cannot come back).
	left  map[weak.Pointer[rpcstatus.Stats]]*member
	gone  map[string]*totals // by zone label
	shown map[string]bool    // by address
	// last are the previous scrape's providers in order, empty when one
	// was listed twice: a scrape that finds the same list skips the
	// bookkeeping.
	last []*rpcstatus.Stats
}

// member is a provider's statistics as the ledger knows them.
type member struct {
	zone string
	gen  uint64
	last totals // its counters when it left, counted in gone
}

// zoneSums are a zone's figures of one scrape.
type zoneSums struct {
	totals
	inFlight int64
	weight   float64
	states   [5]int // by states
}

// ledger returns the ledger of the method labelled mv, marked as seen by
// this scrape. c.mu is held.
func (c *Collector) ledger(mv []string) *ledger {
	key := strings.Join(mv, "\xff")
	l := c.ledgers[key]
	if l == nil {
		l = &ledger{members: map[*rpcstatus.Stats]*member{}, left: map[weak.Pointer[rpcstatus.Stats]]*member{}, gone: map[string]*totals{}}
		c.ledgers[key] = l
	}
	l.gen = c.gen
	return l
}

// sweep forgets the ledgers of the methods this scrape did not see. c.mu
// is held.
func (c *Collector) sweep() {
	for k, l := range c.ledgers {
		if l.gen != c.gen {
			delete(c.ledgers, k)
		}
	}
}

// aggregates sends the method_* series of m, one set per zone, labelled
// mv and the zone; counters include those of the providers that left
// (l.gone), so they only go up.
func (c *Collector) aggregates(ch chan<- prom.Metric, l *ledger, m *describe.Method, mv []string) {
	sums := map[string]*zoneSums{}
	var names []string
	zoneOf := func(z string) string {
		z = labelValue(z)
		if _, ok := sums[z]; !ok {
			if len(names) >= maxZones {
				z = otherZone
			}
			if _, ok := sums[z]; !ok {
				sums[z] = &zoneSums{}
				names = append(names, z)
			}
		}
		return z
	}
	steady := len(l.last) > 0 && len(l.last) == len(m.Providers)
	for i := 0; steady && i < len(m.Providers); i++ {
		steady = l.last[i] == m.Providers[i].Stats
	}
	unique := true
	for i := range m.Providers {
		p := &m.Providers[i]
		zone := zoneOf(p.Zone)
		z := sums[zone]
		z.inFlight += p.InFlight
		z.weight += p.Weight
		if k := slices.Index(states, p.State); k >= 0 {
			z.states[k]++
		}
		if p.Stats == nil {
			z.picks += p.Picks
			z.failures += p.Failures
			z.ejections += p.Ejections
			continue
		}
		if steady {
			z.add(p.Stats)
			continue
		}
		mem := l.members[p.Stats]
		switch {
		case mem == nil && len(l.left) > 0 && l.left[weak.Make(p.Stats)] != nil: // back
			key := weak.Make(p.Stats)
			mem = l.left[key]
			delete(l.left, key)
			if g := l.gone[mem.zone]; g != nil {
				g.plus(&mem.last, -1)
			}
			mem.zone = zone
			l.members[p.Stats] = mem
		case mem == nil:
			mem = &member{zone: zone}
			l.members[p.Stats] = mem
		case mem.gen == c.gen:
			unique = false
			continue // listed twice: counted once
		}
		mem.gen = c.gen
		z.add(p.Stats)
	}
	if !steady {
		l.depart(c.gen)
		l.last = l.last[:0]
		if unique {
			for i := range m.Providers {
				l.last = append(l.last, m.Providers[i].Stats)
			}
		}
	}
	for zone := range l.gone {
		if sums[zone] == nil {
			sums[zone] = &zoneSums{}
			names = append(names, zone)
		}
	}
	for _, zone := range names {
		z := sums[zone]
		if g := l.gone[zone]; g != nil {
			z.plus(g, 1)
		}
		lv := append(mv[:len(mv):len(mv)], zone)
		c.send(ch, c.mPicks, prom.CounterValue, float64(z.picks), lv...)
		c.send(ch, c.mFailed, prom.CounterValue, float64(z.failures), lv...)
		c.send(ch, c.mEjections, prom.CounterValue, float64(z.ejections), lv...)
		c.send(ch, c.mInFlight, prom.GaugeValue, float64(z.inFlight), lv...)
		c.send(ch, c.mWeight, prom.GaugeValue, z.weight, lv...)
		for k, s := range states {
			c.send(ch, c.mProvs, prom.GaugeValue, float64(z.states[k]), append(lv[:len(lv):len(lv)], string(s))...)
		}
		c.histogram(ch, c.mLatency, &z.totals, lv)
	}
}

// depart moves the members that the scrape gen did not see to left, their
// counters to gone, and forgets those of left whose statistics were
// collected.
func (l *ledger) depart(gen uint64) {
	for st, mem := range l.members {
		if mem.gen == gen {
			continue
		}
		mem.last = totals{} // it left
		mem.last.add(st)
		g := l.gone[mem.zone]
		if g == nil {
			g = &totals{}
			l.gone[mem.zone] = g
		}
		g.plus(&mem.last, 1)
		delete(l.members, st)
		l.left[weak.Make(st)] = mem
	}
	for key := range l.left {
		if key.Value() == nil { // collected: cannot come back
			delete(l.left, key)
		}
	}
}

// candidate is a provider that notable may show: its index, its class
// (0 ejected or unavailable, 1 far from the mean) and its distance.
type candidate struct {
	i     int
	class int
	score float64
}

// notable returns, in snapshot order, the indexes of at most n providers
// of m (which has more) to give series of their own: the ejected and
// unavailable, then those at least notableDeviation from the method's
// mean (half that for those l showed last), farthest (then earliest)
// first. It records the choice in l; scratch is its work memory, reused
// (c.mu is held).
func notable(m *describe.Method, n int, l *ledger, scratch *[]candidate) []int {
	ps := m.Providers
	var latSum float64
	var latN int
	for i := range ps {
		if ps[i].LatencyMs > 0 {
			latSum += ps[i].LatencyMs
			latN++
		}
	}
	cands := (*scratch)[:0]
	defer func() { *scratch = cands[:0] }()
	for i := range ps {
		p := &ps[i]
		score := math.Abs(p.Share*float64(len(ps)) - 1)
		if p.LatencyMs > 0 && latSum > 0 {
			score = max(score, math.Abs(p.LatencyMs*float64(latN)/latSum-1))
		}
		switch {
		case p.State == describe.StateEjected || p.State == describe.StateUnavailable:
			cands = append(cands, candidate{i, 0, score})
		case score >= notableDeviation || (score >= notableDeviation/2 && l.shown[p.Address]):
			cands = append(cands, candidate{i, 1, score})
		}
	}
	slices.SortFunc(cands, func(a, b candidate) int {
		return cmp.Or(cmp.Compare(a.class, b.class), cmp.Compare(b.score, a.score), cmp.Compare(a.i, b.i))
	})
	top := cands[:min(n, len(cands))]
	if l.shown == nil {
		l.shown = make(map[string]bool, n)
	}
	clear(l.shown)
	out := make([]int, len(top))
	for k, cd := range top {
		out[k] = cd.i
		l.shown[ps[cd.i].Address] = true
	}
	slices.Sort(out)
	return out
}
