package fewestactive

import (
	"context"
	"math"
	"sync"
	"testing"
	"time"

	"dubbo.apache.org/dubbo-go/v3/cluster/loadbalance"
	_ "dubbo.apache.org/dubbo-go/v3/cluster/loadbalance/leastactive" // registers dubbo-go's own
	dgext "dubbo.apache.org/dubbo-go/v3/common/extension"
	"dubbo.apache.org/dubbo-go/v3/protocol/base"
	"dubbo.apache.org/dubbo-go/v3/protocol/result"
	"github.com/stretchr/testify/assert"

	"github.com/dubbogo-lb/lb/filter"
	"github.com/dubbogo-lb/lb/internal/lblog"
	"github.com/dubbogo-lb/lb/loadbalance/internal/algo"
	"github.com/dubbogo-lb/lb/loadbalance/internal/lbtest"
	"github.com/dubbogo-lb/lb/loadbalance/internal/member"
	"github.com/dubbogo-lb/lb/loadbalance/lbenv"
	"github.com/dubbogo-lb/lb/rpcstatus"
)

// logs collects what a Balancer logs.
type logs struct {
	mu  sync.Mutex
	got []string
}

func (l *logs) line(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.got = append(l.got, s)
}

func (l *logs) lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.got...)
}

// quiet returns a Balancer whose missing-filter message goes to a test log.
func quiet(opts Options) (*Balancer, *logs) {
	l := new(logs)
	lblog.Capture(l.line) // tests run one at a time
	return New(opts), l
}

// seeded returns opts with a deterministic random source.
func seeded(opts Options, seed uint64) Options {
	opts.Env.Rand = algo.Seeded(seed).Uint64
	return opts
}

// inflight starts n calls of method on provider and returns what ends them.
func inflight(provider base.Invoker, method string, n int) (end func()) {
	p := rpcstatus.Of(provider.GetURL())
	m := p.Method(method)
	calls := make([]rpcstatus.Call, n)
	for i := range calls {
		calls[i] = p.Begin(m, rpcstatus.Nanotime())
	}
	return func() {
		for _, c := range calls {
			c.End(rpcstatus.Nanotime(), false)
		}
	}
}

// The reference's tie draw in [1, total] starves the first of 1:1:2. Its
// random source is dubbo-go's own, so the tolerance is Tol's.
func TestDubboGoTieDrawIsBiased(t *testing.T) {
	const picks = 20_000
	got := lbtest.Shares(dgext.GetLoadbalance("leastactive"), lbtest.Weighted("1", "1", "2"), lbtest.Call("Say"), picks)
	assert.InDelta(t, 100./12, got[0], lbtest.Tol(1./12, picks), "dubbo-go v3.3.2 gives 8/33/58 %%: %v", got)
}

// While a new membership's snapshot is built, a pick still avoids the
// busy: of two candidates of the new list that the old snapshot knows, the
// one with fewer calls in flight. The control, the weighted random draw
// that every balancer made meanwhile before, gives the idle provider its
// plain third and fails the same check.
func TestInterimAvoidsTheBusierOfTwo(t *testing.T) {
	b, _ := quiet(seeded(Options{}, 1))
	list := lbtest.N(4)
	old, _ := b.sk.View(list, "Say")
	defer inflight(list[0], "Say", 5)()
	defer inflight(list[1], "Say", 5)()
	now := []base.Invoker{list[0], list[1], list[2], lbtest.Provider(20100, nil)} // list[3] left
	inv := lbtest.Call("Say")
	const picks = 20_000
	idleShare := func(pick func() base.Invoker) float64 {
		n := 0
		for range picks {
			if pick() == list[2] {
				n++
			}
		}
		return 100 * float64(n) / picks
	}
	// Candidates drawn evenly from the three providers known to old: the
	// idle one is picked whenever it is one of the two, 1 - (2/3)² = 5/9.
	const want = 5. / 9
	tol := lbtest.Tol(want, picks)
	assert.InDelta(t, 100*want, idleShare(func() base.Invoker { return b.sk.Interim(old, now, inv) }), tol)
	r := algo.Seeded(2)
	control := idleShare(func() base.Invoker { return member.Interim(old.Set, now, r.Uint64) })
	assert.Greater(t, math.Abs(100*want-control), tol, "control: weighted random, %.1f %%", control)
}

func TestBusyProviderIsAvoided(t *testing.T) {
	const picks = 5_000
	for _, choices := range []int{0, 2} {
		b, _ := quiet(seeded(Options{Choices: choices}, 1))
		list := lbtest.N(10)
		end := inflight(list[3], "Say", 5)
		got := lbtest.Shares(b, list, lbtest.Call("Say"), picks)
		if choices == 0 {
			assert.Zero(t, got[3], "a full scan never picks it")
		} else {
			assert.InDelta(t, 1, got[3], lbtest.Tol(0.01, picks), "two choices pick it only when both draws are it")
		}
		// Only the method's own calls count.
		got = lbtest.Shares(b, list, lbtest.Call("Other"), picks)
		assert.InDelta(t, 10, got[3], lbtest.Tol(0.1, picks))
		end()
		got = lbtest.Shares(b, list, lbtest.Call("Say"), picks)
		assert.InDelta(t, 10, got[3], lbtest.Tol(0.1, picks), "back once its calls ended")
	}
}

// A closed loop through the real filter: every picked call stays in flight
// for a while, ten times longer on the slow provider, which therefore gets
// about a tenth of the fast ones' traffic. Time is counted in ticks of the
// loop, not on a clock.
func TestSlowProviderGetsLessThroughTheFilter(t *testing.T) {
	b, l := quiet(seeded(Options{}, 2))
	list := lbtest.N(3)
	f := filter.New(filter.Options{})
	inv := lbtest.Call("Say")
	type call struct {
		end      int
		done     chan struct{} // closed to let the call return
		returned chan struct{} // closed once the filter saw it return
	}
	var pending []call
	counts := make([]int, 3)
	for tick := range 6_000 {
		// Finish the calls that are due.
		kept := pending[:0]
		for _, c := range pending {
			if c.end <= tick {
				close(c.done)
				<-c.returned
			} else {
				kept = append(kept, c)
			}
		}
		pending = kept
		// Four callers start a call per tick.
		for range 4 {
			got := b.Select(list, inv)
			i := map[base.Invoker]int{list[0]: 0, list[1]: 1, list[2]: 2}[got]
			counts[i]++
			c := call{end: tick + []int{20, 2, 2}[i], done: make(chan struct{}), returned: make(chan struct{})}
			started := make(chan struct{})
			go func() {
				defer close(c.returned)
				f.Invoke(context.Background(), &blocking{Invoker: got, started: started, done: c.done}, inv)
			}()
			<-started
			pending = append(pending, c)
		}
	}
	for _, c := range pending {
		close(c.done)
		<-c.returned
	}
	ratio := float64(counts[0]) / float64(counts[1])
	t.Logf("counts %v ratio %.3f", counts, ratio)
	// In flight counts even out: 20 ticks × its rate ≈ 2 ticks × theirs.
	assert.InDelta(t, 0.1, ratio, 0.03, "counts %v", counts)
	assert.False(t, b.sk.FilterMissing())
	assert.Empty(t, l.lines())
}

// blocking is a provider whose calls last until done is closed.
type blocking struct {
	base.Invoker
	started chan struct{}
	done    chan struct{}
}

func (p *blocking) Invoke(ctx context.Context, inv base.Invocation) result.Result {
	close(p.started)
	<-p.done
	return p.Invoker.Invoke(ctx, inv)
}

func TestBadInput(t *testing.T) {
	b, _ := quiet(seeded(Options{}, 3))
	inv := lbtest.Call("Say")
	one := lbtest.N(1)
	end := inflight(one[0], "Say", 3)
	assert.Same(t, one[0], b.Select(one, inv), "the only provider, however busy")
	end()

	// A drained provider (weight 0 from a provider that means it) gets
	// nothing even with the fewest calls in flight...
	drained := []base.Invoker{
		lbtest.Provider(20000, map[string]string{"weight": "0", "release": "java-3.2"}),
		lbtest.Provider(20001, nil),
	}
	end = inflight(drained[1], "Say", 2)
	c := lbtest.Counts(b, drained, inv, 1_000)
	assert.Equal(t, []int{0, 1_000}, c)
	end()
	// ...unless every provider is drained.
	allDrained := []base.Invoker{
		lbtest.Provider(20000, map[string]string{"weight": "0", "release": "java-3.2"}),
		lbtest.Provider(20001, map[string]string{"weight": "0", "release": "java-3.2"}),
	}
	const picks = 4_000
	got := lbtest.Shares(b, allDrained, inv, picks)
	assert.InDeltaSlice(t, []float64{50, 50}, got, lbtest.Tol(0.5, picks))

	// Choices below 2 mean a full scan, which never picks the busy one.
	for _, choices := range []int{-3, 1} {
		b, _ := quiet(seeded(Options{Choices: choices}, 4))
		list := lbtest.N(4)
		end := inflight(list[0], "Say", 1)
		assert.Zero(t, lbtest.Counts(b, list, inv, 2_000)[0], "choices %d", choices)
		end()
	}
}

func TestRetrySubsetAppliesTheRuleWithinIt(t *testing.T) {
	b, _ := quiet(seeded(Options{}, 5))
	list := lbtest.Weighted("1", "1", "1", "1")
	inv := lbtest.Call("Say")
	lbtest.Counts(b, list, inv, 10)
	sub := []base.Invoker{list[1], list[2], list[3]}
	end := inflight(list[2], "Say", 1)
	defer end()
	// Fewer calls than the rebuild threshold: still a retry of the
	// four-provider snapshot.
	c := lbtest.Counts(b, sub, inv, 10) // panics on a pick outside sub
	assert.Equal(t, 0, c[1], "the busy provider of the subset")
	assert.Equal(t, 10, c[0]+c[2])

	// The subset's ties still follow weights; drained ones are skipped.
	w := lbtest.Weighted("1", "3", "0.000001")
	lbtest.Counts(b, w, inv, 1)
	const picks = 4_000
	sum := []int{0, 0}
	for range picks {
		lbtest.Counts(b, w, inv, 1) // keeps the full snapshot current
		c := lbtest.Counts(b, w[:2], inv, 1)
		sum[0] += c[0]
		sum[1] += c[1]
	}
	assert.InDelta(t, 25, 100*float64(sum[0])/picks, lbtest.Tol(0.25, picks))
}

func TestNoReportWhenTheFilterCounts(t *testing.T) {
	b, l := quiet(Options{})
	list := lbtest.N(3)
	inv := lbtest.Call("Say")
	f := filter.New(filter.Options{})
	for range 5 * member.MissingFilterPicks {
		got := b.Select(list, inv)
		f.Invoke(context.Background(), got, inv)
	}
	// A provider joining later, never called yet, changes nothing.
	grown := append(append([]base.Invoker(nil), list...), lbtest.Provider(20009, nil))
	lbtest.Counts(b, grown, inv, 5*member.MissingFilterPicks)
	assert.False(t, b.sk.FilterMissing())
	assert.Empty(t, l.lines())
	// The watch survives rebuilds; a state that saw calls once stays settled.
	v, _ := b.sk.View(grown, "Say")
	assert.False(t, v.CheckFilter())
}

// A provider that fails fast never looks less busy than while its calls
// ran: each failure of its run weighs as a call in flight. Without that
// (FailureWindow < 0) it draws about half the traffic, as the issue that
// brought outlier ejection measured.
func TestFastFailureIsChargedAsInFlight(t *testing.T) {
	share := func(window time.Duration) float64 {
		return lbtest.FastFailureShare(t, func(env lbenv.Env) loadbalance.LoadBalance {
			return New(Options{FailureWindow: window, Env: env})
		})
	}
	charged, blind := share(0), share(-1)
	t.Logf("fast-failing provider's share: %.4f charged, %.4f not", charged, blind)
	assert.Less(t, charged, 0.01)
	assert.Greater(t, blind, 0.3, "the herding the charge prevents")
}

// Up to ScanUpTo providers a pick finds the one provider with no call in
// flight every time; above, it draws two candidates, which find it in
// about 2 picks in N. ScanUpTo -1 scans at every size (the control).
func TestScanUpToThenTwoChoices(t *testing.T) {
	for _, c := range []struct {
		n, scanUpTo int
		scans       bool
	}{{DefaultScanUpTo, 0, true}, {DefaultScanUpTo + 1, 0, false}, {DefaultScanUpTo + 1, -1, true}, {40, 32, false}} {
		list := lbtest.Ports(21000, c.n)
		for _, p := range list[1:] {
			defer inflight(p, "Say", 1)()
		}
		b, _ := quiet(seeded(Options{ScanUpTo: c.scanUpTo}, 5))
		b.sk.SetInlineUpTo(math.MaxInt) // seeded: every pick from the built snapshot
		const picks = 2000
		idle := 0
		for range picks {
			if b.Select(list, lbtest.Call("Say")) == list[0] {
				idle++
			}
		}
		if c.scans {
			assert.Equal(t, picks, idle, "N=%d ScanUpTo=%d: a scan finds the idle provider", c.n, c.scanUpTo)
		} else {
			// Two uniform draws of n find it with probability 2/n - 1/n².
			p := 2/float64(c.n) - 1/float64(c.n*c.n)
			assert.InDelta(t, 100*p, 100*float64(idle)/picks, lbtest.Tol(p, picks), "N=%d ScanUpTo=%d", c.n, c.scanUpTo)
		}
	}
}
