package fewestactive

import (
	"math"
	"time"

	"dubbo.apache.org/dubbo-go/v3/protocol/base"

	"github.com/dubbogo-lb/lb/loadbalance/internal/algo"
	"github.com/dubbogo-lb/lb/loadbalance/internal/member"
	"github.com/dubbogo-lb/lb/loadbalance/internal/skeleton"
	"github.com/dubbogo-lb/lb/loadbalance/lbenv"
	"github.com/dubbogo-lb/lb/rpcstatus"
	"github.com/dubbogo-lb/lb/warmup"
)

// Name is the name the balancer is registered under with dubbo-go.
const Name = "fewestactive"

// Options configure a Balancer. The zero value is ready to use.
type Options struct {
	// Warmup configures the warmup of new providers.
	Warmup warmup.Options
	// Env is the balancer's clocks and random source; the zero value is
	// the real ones (see lbenv.Env).
	Env lbenv.Env
	// Choices selects the power-of-d-choices mode at every size: when it
	// is 2 or more and smaller than the number of providers, each pick
	// draws Choices providers in proportion to their warm weight and
	// takes the one with the fewest calls in flight. The default, 0, and
	// any value below 2 scan every provider, which finds the true minimum,
	// up to ScanUpTo providers, and draw 2 above.
	Choices int
	// ScanUpTo is the largest number of providers a pick scans in full
	// when Choices is below 2; above it a pick draws 2 candidates (Envoy's
	// least_request), as a scan would cost more than 2 µs (see DESIGN.md).
	// Default DefaultScanUpTo; negative: scan at every size.
	ScanUpTo int
	// FailureWindow is how long a provider's latest failure weighs: until
	// then each failure of its current run counts as one more call in
	// flight, so that a provider that fails fast never looks less busy
	// than while its calls ran. Failures are those that
	// count for outlier ejection (the outlier.errors parameter), whether
	// ejection is on or not. Default 10 s; negative: never.
	FailureWindow time.Duration
}

// DefaultScanUpTo is the default Options.ScanUpTo: a scan of 256
// providers costs about 1.5 µs.
const DefaultScanUpTo = 256

// defaultFailureWindow is the default Options.FailureWindow.
const defaultFailureWindow = skeleton.FailureWindow

// Balancer is the least-active balancer. It is safe for concurrent use; one
// Balancer serves every service and method. Select returns the provider
// with the fewest calls in flight for the invocation's method, ties broken
// in proportion to warm weight.
type Balancer struct {
	skeleton.Front[table] // Select, Describe, Rebuilds

	sk       *skeleton.Balancer[table]
	choices  int // candidates of a pick that does not scan
	scanUpTo int // the largest list a pick scans
	rand     algo.Rand
	window   int64 // ns; 0: failures never weigh
	now      func() int64
}

// table is the balancer's state for one snapshot of providers.
type table struct {
	// alias draws candidates in proportion to warm weight in the
	// power-of-d-choices mode; nil when the weights are equal or the mode
	// is off.
	alias *algo.Alias
	// stats and weights are the statistics and warm weights in one slice
	// each, for the scan; nil when the picks draw candidates.
	stats   []*rpcstatus.Stats
	weights []float64
}

// New returns a Balancer.
func New(opts Options) *Balancer {
	opts.Env = opts.Env.WithDefaults()
	b := &Balancer{choices: opts.Choices, scanUpTo: opts.Choices, rand: algo.Source(opts.Env.Rand), window: int64(opts.FailureWindow), now: opts.Env.Now}
	if b.choices < 2 {
		b.choices, b.scanUpTo = 2, opts.ScanUpTo
		switch {
		case b.scanUpTo == 0:
			b.scanUpTo = DefaultScanUpTo
		case b.scanUpTo < 0:
			b.scanUpTo = math.MaxInt
		}
	}
	switch {
	case opts.FailureWindow == 0:
		b.window = int64(defaultFailureWindow)
	case opts.FailureWindow < 0:
		b.window = 0
	}
	b.sk = skeleton.New(skeleton.Spec[table]{
		Name: Name, Warmup: opts.Warmup, Env: opts.Env,
		Build: func(s *member.Set, _ *member.View[table]) *table {
			t := &table{}
			if b.scans(s.Len()) {
				t.stats, t.weights = s.Stats(), s.Weights()
			} else {
				t.alias = s.WarmAlias()
			}
			return t
		},
		Pick: b.pick,
		Among: func(v *member.View[table], list []base.Invoker, _ base.Invocation) base.Invoker {
			return among(v.Set, list, b.rand.Uint64(), b.charge(v.Set))
		},
		ReadsAllUpTo: b.scanUpTo,
		Uncounted:    "least-active works as weighted random",
	})
	b.Front = skeleton.FrontOf(b.sk)
	return b
}

// scans reports whether a pick among n providers scans them all.
func (b *Balancer) scans(n int) bool { return n <= b.scanUpTo }

// pick returns the slot of v with the fewest calls in flight: among all
// providers, or among b.choices candidates drawn in proportion to warm
// weight.
func (b *Balancer) pick(v *member.View[table], _ base.Invocation) int {
	c := b.charge(v.Set)
	if b.scans(v.Len()) {
		return scanFewest(v.Table.stats, v.Table.weights, v.Uniform, b.rand.Uint64(), c)
	}
	return choosePair(v.Set, v.Table.alias, b.choices, b.rand.Func(), c)
}

// charge returns how a pick among s charges failures: not at all, without
// reading the clock, unless a failure counted on one of its providers
// less than the window ago.
func (b *Balancer) charge(s *member.Set) failureCharge {
	return skeleton.RecentFailures(s, b.window, b.now)
}

// among applies the least-active rule to list, a subset of s offered by a
// failover retry or the two candidates of a pick while a new snapshot is
// built. It looks each provider up in s, which is slower than scanFewest
// but spares a list of indexes; retries are rare.
func among(s *member.Set, list []base.Invoker, u uint64, c failureCharge) base.Invoker {
	least := int64(math.MaxInt64)
	first, last, count := -1, -1, 0
	total := 0.0
	for j, inv := range list {
		i, _ := s.Index(inv)
		w := s.Weight(i)
		if !algo.Usable(w) {
			continue
		}
		switch a := c.Load(s.Stat(i)); {
		case a < least:
			least, first, last, count, total = a, j, j, 1, w
		case a == least:
			last, count, total = j, count+1, total+w
		}
	}
	switch count {
	case 0: // every provider of the subset is drained
		return s.PickAmong(list, u)
	case 1:
		return list[first]
	}
	r := algo.Float64(u) * total
	found := first
	for j := first; j <= last; j++ {
		i, _ := s.Index(list[j])
		w := s.Weight(i)
		if !algo.Usable(w) || c.Load(s.Stat(i)) != least {
			continue
		}
		found = j
		if r -= w; r < 0 {
			break
		}
	}
	return list[found]
}
