// Package outlier is the outlier detection of every balancer of the module
// (Envoy's and gRPC's, gRFC A50): a Detector ejects a provider that fails,
// for one (service, method), from the snapshots the balancers pick from,
// and lets it back when its ejection time is over. The lbactive filter
// feeds it through an rpcstatus.Board; package member applies its Decision
// to each snapshot (an ejected provider's weight is 0). Notes: DESIGN.md.
package outlier

import (
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"dubbo.apache.org/dubbo-go/v3/common"
	"dubbo.apache.org/dubbo-go/v3/protocol/base"

	"github.com/dubbogo-lb/lb/internal/lblog"
	"github.com/dubbogo-lb/lb/internal/urlmap"
	"github.com/dubbogo-lb/lb/loadbalance/internal/algo"
	"github.com/dubbogo-lb/lb/rpcstatus"
)

// Detector is the outlier detection of one (service, method) of one
// balancer. Decide is for snapshot builds (it locks and allocates); the
// hot paths only touch its Board.
type Detector struct {
	board atomic.Pointer[rpcstatus.Board] // apart: the statistics linked to it hold it

	mu       sync.Mutex
	cfgFrom  *common.URL // the URL cfg was read from
	cfg      Config
	problems string                                // the configuration problems logged last
	records  urlmap.Store[rpcstatus.Stats, record] // providers with baselines or an ejection
	nextTick int64                                 // when the interval rules look next; 0: not scheduled
	panicked bool                                  // ejection is ignored under the panic threshold
	// lastStats and lastRecs (nil: none) are the statistics evaluate saw
	// last and their records, walked by the next (algo.Match); spare is
	// the other array of records, cleared between uses.
	lastStats       []*rpcstatus.Stats
	lastRecs, spare []*record
}

// record is what the Detector keeps of one provider (one Stats).
type record struct {
	until, since         int64  // ejected until (ns; 0: not ejected), since
	rule                 string // what ejected it
	times, returned      int64  // ejections in a row, as of returned, its latest return
	baseCalls, baseFails int64  // Total and Counted at the latest interval
	seen                 bool   // baselines are set
}

// Board returns the board the filter feeds, made on first use.
func (d *Detector) Board() *rpcstatus.Board {
	if b := d.board.Load(); b != nil {
		return b
	}
	d.board.CompareAndSwap(nil, new(rpcstatus.Board))
	return d.board.Load()
}

// Decision is what a Detector decided for one snapshot.
type Decision struct {
	Ejected []bool // the ejected providers in the snapshot's order; nil for none
	Alarm   uint64 // the board's alarm it saw: the snapshot is stale once Raised differs
	Enabled bool   // a rule may eject
	// Panic: fewer than the panic threshold would be usable, so ejection
	// is ignored (Ejected nil) and every provider serves.
	Panic bool
}

// Decide links the board to stats, the statistics of the providers
// invokers of a snapshot for method, reads the configuration from the
// first provider's URL, lets back the providers whose ejection is over and
// ejects those a rule finds failing, within the limits. Its clock is the
// time of the board's latest alarm.
func (d *Detector) Decide(method string, invokers []base.Invoker, stats []*rpcstatus.Stats) Decision {
	alarm, now := d.Board().Alarm()
	d.mu.Lock()
	defer d.mu.Unlock()
	d.configure(invokers[0].GetURL(), method)
	for _, s := range stats {
		s.Link(d.Board())
	}
	ejected := d.evaluate(now, invokers, stats, method)
	return Decision{Alarm: alarm, Enabled: d.cfg.Enabled(), Ejected: ejected, Panic: d.panicked}
}

// configure (re)reads the configuration when the URL it came from changed.
func (d *Detector) configure(u *common.URL, method string) {
	if u == d.cfgFrom {
		return
	}
	d.cfgFrom = u
	cfg, problems := ReadConfig(u, method)
	if p := strings.Join(problems, "; "); p != d.problems {
		d.problems = p
		if p != "" {
			lblog.Warnf("outlier ejection, service %s, method %s: %s", u.ServiceKey(), method, p)
		}
	}
	d.cfg = cfg
	d.Board().Configure(cfg.ConsecutiveFailures, cfg.Counted) // 0 when the rule is off
	if !cfg.Periodic() {
		d.nextTick = 0
	}
}

// evaluate applies the rules at now and returns the ejected slots, nil if
// none (or if the panic threshold says to ignore them).
func (d *Detector) evaluate(now int64, invokers []base.Invoker, stats []*rpcstatus.Stats, method string) []bool {
	cfg := &d.cfg
	n := len(stats)
	if cap(d.spare) < n {
		d.spare = make([]*record, n)
	}
	recs := d.spare[:n]
	algo.Match(stats, d.lastStats, nil, func(i, j int) { recs[i] = d.lastRecs[j] })
	defer func() { // a copy: the caller may reuse stats
		clear(d.lastRecs)
		had := len(d.lastStats)
		d.lastStats = append(d.lastStats[:0], stats...)
		clear(d.lastStats[n:max(n, had)])
		d.lastRecs, d.spare = recs, d.lastRecs
	}()
	ejected := 0
	periodic := cfg.Enabled() && cfg.Periodic()
	for i, s := range stats {
		r := recs[i]
		if r == nil { // a provider that came, or that the walk missed
			// Records are made only for interval baselines or an ejection.
			if r = d.records.Load(s); r == nil && periodic {
				r = d.record(s)
			}
			if recs[i] = r; r == nil {
				continue
			}
		}
		if r.until == 0 {
			continue
		}
		if now >= r.until || !cfg.Enabled() {
			d.release(r, s, now, invokers[i], method)
			continue
		}
		ejected++
	}
	untimed := false // a provider to eject before any alarm gave the time
	if cfg.Enabled() {
		limit := max(1, int(float64(n)*cfg.MaxEjectionPercent/100))
		eject := func(i int, rule, why string) {
			if ejected >= limit || recs[i] != nil && recs[i].until != 0 {
				return
			}
			if now == 0 { // a run from another board: wait for a timed alarm
				untimed = true
				return
			}
			ejected++
			if recs[i] == nil {
				recs[i] = d.record(stats[i])
			}
			d.eject(recs[i], stats[i], now, rule, why, invokers[i], method, ejected, n)
		}
		if k := cfg.ConsecutiveFailures; k > 0 {
			for i, s := range stats {
				if streak := s.Streak(); streak >= k {
					eject(i, ruleConsecutiveFailures, fmt.Sprintf("%d failures in a row", streak))
				}
			}
		}
		if cfg.Periodic() && now > 0 { // now is 0 until the first alarm
			if d.nextTick != 0 && now >= d.nextTick {
				d.interval(recs, stats, eject)
			}
			if d.nextTick == 0 || now >= d.nextTick {
				d.nextTick = now + int64(cfg.Interval)
			}
		}
	}
	d.Board().WakeAt(d.wakeAt(recs, untimed))
	if ejected == 0 {
		d.panicked = false
		return nil
	}
	usable := n - ejected
	if usable == 0 || float64(usable) < cfg.PanicThreshold/100*float64(n) {
		if !d.panicked {
			lblog.Warnf("outlier ejection, service %s, method %s: %d of %d providers ejected, fewer than %g%% usable (panic threshold): ignoring ejection, every provider serves",
				invokers[0].GetURL().ServiceKey(), method, ejected, n, cfg.PanicThreshold)
		}
		d.panicked = true
		return nil
	}
	d.panicked = false
	out := make([]bool, n)
	for i, r := range recs {
		out[i] = r != nil && r.until != 0
	}
	return out
}

// record returns the record of s, made with its baselines if new.
func (d *Detector) record(s *rpcstatus.Stats) *record {
	r := d.records.Get(s)
	if !r.seen {
		r.seen, r.baseCalls, r.baseFails = true, s.Total(), s.Counted()
	}
	return r
}

// interval applies the failure-percentage and success-rate rules to the
// calls since the previous interval, and starts the next one.
func (d *Detector) interval(recs []*record, stats []*rpcstatus.Stats, eject func(i int, rule, why string)) {
	cfg := &d.cfg
	calls := make([]int64, len(stats))
	fails := make([]int64, len(stats))
	for i, s := range stats {
		r := recs[i]
		total, counted := s.Total(), s.Counted()
		calls[i], fails[i] = total-r.baseCalls, counted-r.baseFails
		r.baseCalls, r.baseFails = total, counted
	}
	if fp := cfg.FailurePercentage; fp.Enabled {
		for _, i := range fp.Eject(calls, fails) {
			eject(i, ruleFailurePercentage, fmt.Sprintf("%d of %d calls failed in %v, %g%% or more", fails[i], calls[i], cfg.Interval, fp.Threshold))
		}
	}
	if sr := cfg.SuccessRate; sr.Enabled {
		out, mean, threshold := sr.Eject(calls, fails)
		for _, i := range out {
			eject(i, ruleSuccessRate, fmt.Sprintf("success rate %.1f%% in %v, below %.1f%% (the mean %.1f%% less %g standard deviations)",
				100*(1-float64(fails[i])/float64(calls[i])), cfg.Interval, 100*threshold, 100*mean, sr.StdevFactor))
		}
	}
}

// eject ejects the provider of r and s at now.
func (d *Detector) eject(r *record, s *rpcstatus.Stats, now int64, rule, why string, inv base.Invoker, method string, ejected, n int) {
	cfg := &d.cfg
	times := r.times
	if r.returned != 0 && cfg.Interval > 0 {
		times = max(times-(now-r.returned)/int64(cfg.Interval), 0)
	}
	r.times = times + 1
	dur := EjectionTime(cfg.BaseEjectionTime, cfg.MaxEjectionTime, r.times)
	r.until, r.since, r.rule = now+int64(dur), now, rule
	s.Ejected()
	u := inv.GetURL()
	lblog.Warnf("outlier ejection, service %s, method %s: provider %s ejected for %v (ejection %d in a row) by the %s rule: %s; %d of %d providers ejected",
		u.ServiceKey(), method, u.Location, dur, r.times, rule, why, ejected, n)
}

// release lets the provider of r back at now.
func (d *Detector) release(r *record, s *rpcstatus.Stats, now int64, inv base.Invoker, method string) {
	u := inv.GetURL()
	lblog.Warnf("outlier ejection, service %s, method %s: provider %s returns after %v of ejection (by the %s rule)",
		u.ServiceKey(), method, u.Location, time.Duration(now-r.since).Round(time.Millisecond), r.rule)
	r.until, r.returned = 0, now
	s.Returned()
}

// wakeAt is when to decide again without a new failure: the first end of
// an ejection or the next interval; 0: never; 1: at the first call.
func (d *Detector) wakeAt(recs []*record, untimed bool) int64 {
	at := d.nextTick
	if untimed || at == 0 && d.cfg.Enabled() && d.cfg.Periodic() {
		at = 1
	}
	for _, r := range recs {
		if r != nil && r.until != 0 && (at == 0 || r.until < at) {
			at = r.until
		}
	}
	return at
}

// EjectionTime is the length of the times-th ejection in a row: base ×
// times, capped at max(base, maxTime) (gRFC A50).
func EjectionTime(base, maxTime time.Duration, times int64) time.Duration {
	limit := max(base, maxTime)
	if times <= 0 || base > limit/time.Duration(times) {
		return limit
	}
	return base * time.Duration(times)
}

// Eject returns the indexes of the providers the rule ejects, given each
// one's calls and failures over an interval.
func (fp FailurePercentage) Eject(calls, fails []int64) []int {
	var out []int
	hosts := int64(0)
	for i := range calls {
		if calls[i] >= fp.RequestVolume {
			hosts++
			if 100*float64(fails[i]) >= fp.Threshold*float64(calls[i]) {
				out = append(out, i)
			}
		}
	}
	if hosts < fp.MinimumHosts {
		return nil
	}
	return out
}

// Eject returns the indexes of the providers the rule ejects, given each
// one's calls and failures over an interval, and the mean success rate and
// the threshold (in [0, 1]).
func (sr SuccessRate) Eject(calls, fails []int64) (out []int, mean, threshold float64) {
	var rates []float64
	var idx []int
	for i := range calls {
		if calls[i] >= sr.RequestVolume && calls[i] > 0 {
			rates = append(rates, 1-float64(fails[i])/float64(calls[i]))
			idx = append(idx, i)
		}
	}
	if int64(len(rates)) < sr.MinimumHosts || len(rates) == 0 {
		return nil, 0, 0
	}
	for _, r := range rates {
		mean += r
	}
	mean /= float64(len(rates))
	var variance float64
	for _, r := range rates {
		variance += (r - mean) * (r - mean)
	}
	stdev := math.Sqrt(variance / float64(len(rates)))
	threshold = mean - sr.StdevFactor*stdev
	for k, r := range rates {
		if r < threshold {
			out = append(out, idx[k])
		}
	}
	return out, mean, threshold
}
