package shortestresponse

import (
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"dubbo.apache.org/dubbo-go/v3/protocol/base"

	"github.com/dubbogo-lb/lb/loadbalance/describe"
	"github.com/dubbogo-lb/lb/loadbalance/internal/algo"
	"github.com/dubbogo-lb/lb/loadbalance/internal/member"
	"github.com/dubbogo-lb/lb/loadbalance/internal/skeleton"
	"github.com/dubbogo-lb/lb/loadbalance/lbenv"
	"github.com/dubbogo-lb/lb/rpcstatus"
	"github.com/dubbogo-lb/lb/warmup"
)

// Name is Dubbo Java's name of the balancer, under which package extension
// registers it.
const Name = "shortestresponse"

// Defaults of Options.
const (
	// defaultSlidePeriod is Java's window, 30 s.
	defaultSlidePeriod = 30 * time.Second
	// defaultRefresh is how often the means are read from the counters.
	defaultRefresh = 10 * time.Millisecond
)

// Options configure a Balancer. The zero value is Java's balancer.
type Options struct {
	// Warmup configures the warmup of new providers (their weight in the
	// draw among ties).
	Warmup warmup.Options
	// Env is the balancer's clocks and random source; the zero value is
	// the real ones (see lbenv.Env).
	Env lbenv.Env
	// SlidePeriod is the window's length when shortestresponse.slidePeriod
	// is unset or invalid; default 30 s.
	SlidePeriod time.Duration
	// Refresh is how often a pick reads the providers' means anew; default
	// 10 ms.
	Refresh time.Duration
}

// Balancer is the shortest-response balancer. It is safe for concurrent
// use; one Balancer serves every service and method.
type Balancer struct {
	skeleton.Front[table] // Select, Describe, Rebuilds

	sk   *skeleton.Balancer[table]
	opts Options
	rand algo.Rand
}

// New returns a Balancer.
func New(opts Options) *Balancer {
	opts.Env = opts.Env.WithDefaults()
	if opts.SlidePeriod <= 0 {
		opts.SlidePeriod = defaultSlidePeriod
	}
	if opts.Refresh <= 0 {
		opts.Refresh = defaultRefresh
	}
	b := &Balancer{opts: opts, rand: algo.Source(opts.Env.Rand)}
	b.sk = skeleton.New(skeleton.Spec[table]{
		Name: Name, Warmup: opts.Warmup, Env: opts.Env,
		Build: b.build, Pick: b.pick, Among: b.among, Describe: b.describe,
		ReadsAllUpTo: math.MaxInt, // the pick reads every provider
		Uncounted:    "no response time nor call in flight is known, so shortestresponse picks at random",
	})
	b.Front = skeleton.FrontOf(b.sk)
	return b
}

// table is the balancer's state for one snapshot of providers.
type table struct {
	period   int64    // the window, ns
	problems []string // of the configuration, reported once
	// next is when the means are next read (ns); end is when the current
	// window ends.
	next, end atomic.Int64
	// mean is each provider's mean for the estimate (ns), as last read.
	mean []atomic.Int64
	// win is each provider's window, carried over from the snapshot
	// before for the providers that stay.
	win []*window

	// The scan's view: the providers of usable weight (all, as equal,
	// when none has one) as entries sorted by mean in the half of byMean
	// that cur names; a refresh writes the other half, then flips cur.
	// seq[h] is odd while half h is written: a pick that sees it change
	// scans again.
	eligible []int              // the slots in byMean
	equal    bool               // no provider has a usable weight: each counts as 1
	all      *algo.Alias        // the draw when every estimate ties; nil: equal weights
	weights  []float64          // the warm weights in one slice
	stats    []*rpcstatus.Stats // the statistics in one slice
	byMean   [2][]atomic.Uint64
	seq      [2]atomic.Uint32
	cur      atomic.Uint32
	mu       sync.Mutex // held by the refresh (TryLock: nobody waits)
	scratch  []uint64   // the refresh's, under mu
}

// window is Java's SlideWindowData: the provider's counters when the
// window began, and the mean of the window before if it had a success.
type window struct {
	succeeded, elapsed atomic.Int64 // at the window's start
	prev               atomic.Int64 // ns; 0: none
}

// succeeded returns the successful calls of c and their summed elapsed
// time (ns).
func succeeded(c *rpcstatus.Counters) (n, elapsed int64) {
	return c.Total() - c.Failed(), int64(c.TotalElapsed() - c.FailedElapsed())
}

// mean returns the mean of the successful calls of c since the window
// began; ok is false when it had none.
func (w *window) mean(c *rpcstatus.Counters) (m int64, ok bool) {
	n, e := succeeded(c)
	if n -= w.succeeded.Load(); n > 0 {
		return max(e-w.elapsed.Load(), 0) / n, true
	}
	return 0, false
}

// roll starts a new window at c's counters. The mean of the window that
// ends becomes the previous mean, or none without a success, so that a
// provider avoided for a whole window is probed again as an unknown one,
// as Java's reset does.
func (w *window) roll(c *rpcstatus.Counters) {
	n, e := succeeded(c)
	if d := n - w.succeeded.Load(); d > 0 {
		w.prev.Store(max(e-w.elapsed.Load(), 0) / d)
	} else {
		w.prev.Store(0)
	}
	w.succeeded.Store(n)
	w.elapsed.Store(e)
}

func (b *Balancer) build(s *member.Set, prev *member.View[table]) *table {
	cfg, problems := parseConfig(b.opts, skeleton.Params(s, nil))
	var before []string
	if prev != nil {
		before = prev.Table.problems
	}
	skeleton.Report(Name, s, problems, before)
	n := s.Len()
	t := &table{period: int64(cfg.period), mean: make([]atomic.Int64, n), win: make([]*window, n), problems: problems}
	for i, inv := range s.Invokers {
		if prev != nil {
			if j, ok := prev.Index(inv); ok {
				t.win[i] = prev.Table.win[j]
				continue
			}
		}
		t.win[i] = new(window)
		t.win[i].roll(&s.Stat(i).Counters) // Java's window starts when it first sees the provider
	}
	if prev != nil {
		t.end.Store(prev.Table.end.Load())
	}
	t.weights, t.stats = s.Weights(), s.Stats()
	for i, w := range t.weights {
		if algo.Usable(w) {
			t.eligible = append(t.eligible, i)
		}
	}
	if t.equal = len(t.eligible) == 0; t.equal {
		for i := range n {
			t.eligible = append(t.eligible, i)
		}
	}
	if !s.Uniform && !t.equal {
		t.all = algo.NewAlias(t.weights)
	}
	t.scratch = make([]uint64, 0, len(t.eligible))
	for h := range t.byMean {
		t.byMean[h] = make([]atomic.Uint64, len(t.eligible))
	}
	// The means as they are now, so that the first picks do not take
	// every provider for equal.
	now := b.opts.Env.Now()
	t.next.Store(now + int64(b.opts.Refresh))
	t.read(t.stats, now)
	return t
}

// refresh reads the means at now, once per Refresh: the caller that wins
// the period does it (and rolls the windows when the slide period is
// over), the others go on with the means as they are.
func (b *Balancer) refresh(v *member.View[table], now int64) {
	t := v.Table
	next := t.next.Load()
	if now < next || !t.next.CompareAndSwap(next, now+int64(b.opts.Refresh)) || !t.mu.TryLock() {
		return
	}
	defer t.mu.Unlock()
	t.read(t.stats, now)
}

// recentHorizon and recentSamples bound the recent mean (recentMean).
const (
	recentHorizon = time.Second
	recentSamples = 16
)

// recentMean returns the mean latency (ns) of the successes among the
// provider's newest completions, those of the last recentHorizon but at
// least recentSamples; 0 with fewer than recentSamples successes.
func recentMean(st *rpcstatus.Stats, now int64) int64 {
	w := st.Window()
	s := w.Summary()
	if s.Span > recentHorizon {
		s = w.Recent(now-int64(recentHorizon), recentSamples)
	}
	if s.Samples-s.Errors < recentSamples {
		return 0
	}
	return max(int64(s.SuccessLatency), 1)
}

// read reads the means from the counters at now (rolling the windows when
// the slide period is over) into the half of byMean that cur does not
// name, then flips cur; under mu, or before t is published.
func (t *table) read(stats []*rpcstatus.Stats, now int64) {
	if end := t.end.Load(); end == 0 {
		t.end.Store(now + t.period)
	} else if now >= end {
		for i, w := range t.win {
			w.roll(&stats[i].Counters)
		}
		t.end.Store(now + t.period)
	}
	least := int64(0)
	for i, w := range t.win {
		m, ok := w.mean(&stats[i].Counters)
		if r := recentMean(stats[i], now); ok && r > 0 {
			m = r
		}
		if !ok {
			m = 0
		} else if least == 0 || m < least {
			least = max(m, 1)
		}
		t.mean[i].Store(m)
	}
	// A provider without a success in the window: the smallest known
	// mean, so that it is probed, or its own previous mean when smaller
	// or when nobody has a mean yet, so that it is not flooded.
	for i, w := range t.win {
		if t.mean[i].Load() == 0 {
			m := least
			if p := w.prev.Load(); p > 0 && (m == 0 || p < m) {
				m = p
			}
			t.mean[i].Store(m)
		}
	}
	sorted := t.scratch[:0]
	for _, i := range t.eligible {
		sorted = append(sorted, pack(t.mean[i].Load(), i))
	}
	slices.Sort(sorted) // nearly sorted already from one period to the next: pdqsort's linear case
	h := 1 - t.cur.Load()
	t.seq[h].Add(1) // odd: being written
	for k, x := range sorted {
		t.byMean[h][k].Store(x)
	}
	t.seq[h].Add(1)
	t.cur.Store(h)
}

// failureWindow is how long a provider's latest failure weighs (ns): each
// failure of its current run counts as a call in flight until then.
const failureWindow = int64(skeleton.FailureWindow)

// pick returns the slot of v with the shortest estimate.
func (b *Balancer) pick(v *member.View[table], _ base.Invocation) int {
	t := v.Table
	if now := b.opts.Env.Now(); now >= t.next.Load() {
		b.refresh(v, now)
	}
	u := b.rand.Uint64()
	f := skeleton.RecentFailures(v.Set, failureWindow, b.opts.Env.Now)
	var i int
	for range 4 { // a fourth rewrite under one pick: take what it read
		h := t.cur.Load()
		seq := t.seq[h].Load()
		i = shortest(t.byMean[h], true, t.stats, f, t.weights, v.Uniform || t.equal, t.all, u)
		if seq&1 == 0 && t.seq[h].Load() == seq {
			break
		}
	}
	return i
}

// among applies the same rule, unsorted, to a subset of v: a failover
// retry's, or the two candidates of a pick while a new snapshot is built.
func (b *Balancer) among(v *member.View[table], list []base.Invoker, _ base.Invocation) base.Invoker {
	t := v.Table
	var buf [16]atomic.Uint64
	ents := buf[:0:0]
	if len(list) <= len(buf) {
		ents = buf[:len(list)]
	} else {
		ents = make([]atomic.Uint64, len(list))
	}
	n, equal := 0, false
	for pass := 0; n == 0 && pass < 2; pass++ { // the second: none usable, all as equal
		equal = pass == 1
		for _, inv := range list {
			if i, ok := v.Index(inv); ok && (equal || algo.Usable(v.Weight(i))) {
				ents[n].Store(pack(t.mean[i].Load(), i))
				n++
			}
		}
	}
	if n == 0 {
		return list[0]
	}
	f := skeleton.RecentFailures(v.Set, failureWindow, b.opts.Env.Now)
	return v.Invokers[shortest(ents[:n], false, v.Table.stats, f, v.Table.weights, v.Uniform || equal, nil, b.rand.Uint64())]
}

// describe gives each provider its estimate as its cost.
func (b *Balancer) describe(v *member.View[table], now int64, ps []describe.Provider) {
	f := skeleton.RecentFailures(v.Set, failureWindow, func() int64 { return now })
	for i := range ps {
		ps[i].CostMs = float64(estimate(v.Table.mean[i].Load(), f.Load(v.Stat(i)))) / 1e6
	}
}
