package fewestactive

import (
	"math"
	"time"

	"dubbo.apache.org/dubbo-go/v3/protocol/base"

	"github.com/dubbogo-lb/lb/loadbalance/internal/algo"
	"github.com/dubbogo-lb/lb/loadbalance/internal/member"
	"github.com/dubbogo-lb/lb/loadbalance/internal/skeleton"
	"github.com/dubbogo-lb/lb/loadbalance/lbenv"
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
	// Choices, 2 or more, makes every pick draw Choices providers in
	// proportion to warm weight and take the one with the fewest calls in
	// flight, at every size. The default, 0, and values below 2 scan
	// every provider up to ScanUpTo providers and draw 2 above.
	Choices int
	// ScanUpTo is the most providers a pick scans when Choices is below
	// 2. Default DefaultScanUpTo; negative: scan at every size.
	ScanUpTo int
	// FailureWindow is how long a provider's latest failure weighs: until
	// then each failure of its current run (those that count for outlier
	// ejection, outlier.errors) counts as one more call in flight. Default
	// 10 s; negative: never.
	FailureWindow time.Duration
}

// DefaultScanUpTo is the default Options.ScanUpTo.
const DefaultScanUpTo = 256

// Balancer is the least-active balancer. It is safe for concurrent use; one
// Balancer serves every service and method.
type Balancer struct {
	skeleton.Front[algo.Alias] // Select, Describe, Rebuilds

	sk       *skeleton.Balancer[algo.Alias]
	choices  int // candidates of a pick that does not scan
	scanUpTo int // the largest list a pick scans
	rand     algo.Rand
	window   int64 // ns; 0: failures never weigh
	now      func() int64
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
		b.window = int64(skeleton.FailureWindow)
	case opts.FailureWindow < 0:
		b.window = 0
	}
	b.sk = skeleton.New(skeleton.Spec[algo.Alias]{
		Name: Name, Warmup: opts.Warmup, Env: opts.Env,
		// A scan reads the Set's statistics and warm weights; two choices
		// draw through the alias table of the warm weights (nil when they
		// are equal).
		Build: func(s *member.Set, _ *member.View[algo.Alias]) *algo.Alias {
			if b.scans(s.Len()) {
				return nil
			}
			return s.WarmAlias()
		},
		Pick: b.pick,
		Among: func(v *member.View[algo.Alias], list []base.Invoker, _ base.Invocation) base.Invoker {
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

// pick returns the slot of v with the fewest calls in flight: of all
// providers, or of b.choices drawn in proportion to warm weight.
func (b *Balancer) pick(v *member.View[algo.Alias], _ base.Invocation) int {
	c := b.charge(v.Set)
	if b.scans(v.Len()) {
		return scanFewest(v.Stats(), v.Weights(), v.Uniform, b.rand.Uint64(), c)
	}
	return choosePair(v.Set, v.Table, b.choices, b.rand.Func(), c)
}

// charge returns how a pick among s charges failures (skeleton.RecentFailures).
func (b *Balancer) charge(s *member.Set) failureCharge {
	return skeleton.RecentFailures(s, b.window, b.now)
}

// among applies the least-active rule to list, a subset of s (a failover
// retry's, or the two candidates of a pick while a snapshot is built):
// ties drawn in proportion to weight by weighted reservoir sampling, as
// scanCharged does. It looks each provider up in s; retries are rare.
func among(s *member.Set, list []base.Invoker, u uint64, c failureCharge) base.Invoker {
	pick, fewest, seen := -1, int64(math.MaxInt64), 0.0
	for j, inv := range list {
		i, _ := s.Index(inv)
		w := s.Weight(i)
		if load := c.Load(s.Stat(i)); algo.Usable(w) && load <= fewest {
			if load < fewest {
				fewest, seen = load, 0
			}
			seen += w
			if u = algo.Mix(u); algo.Float64(u)*seen < w {
				pick = j
			}
		}
	}
	if pick < 0 { // every provider of the subset is drained
		return s.PickAmong(list, u)
	}
	return list[pick]
}
