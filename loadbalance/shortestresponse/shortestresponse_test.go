package shortestresponse

import (
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"dubbo.apache.org/dubbo-go/v3/protocol/base"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dubbogo-lb/lb/loadbalance/internal/algo"
	"github.com/dubbogo-lb/lb/loadbalance/internal/lbtest"
	"github.com/dubbogo-lb/lb/loadbalance/lbenv"
	"github.com/dubbogo-lb/lb/rpcstatus"
)

const ms = int64(time.Millisecond)

// fixture returns a balancer on a driven clock (at 1 s) and n providers
// with ejection off and the given params.
func fixture(n int, params map[string]string) (*Balancer, *lbtest.Nanos, []base.Invoker) {
	c := &lbtest.Nanos{NS: int64(time.Second)}
	b := New(Options{Env: lbenv.Env{Now: c.Now, Rand: algo.Seeded(7).Uint64}})
	return b, c, lbtest.NoEjection(21000, n, params)
}

// inFlight starts n calls of Say on p that never end during the test.
func inFlight(p base.Invoker, n int) {
	pr := rpcstatus.Of(p.GetURL())
	for range n {
		pr.Begin(pr.Method("Say"), 0)
	}
}

func count(b *Balancer, list []base.Invoker, picks int) []int {
	return lbtest.Counts(b, list, lbtest.Call("Say"), picks)
}

func TestEstimate(t *testing.T) {
	assert.Equal(t, int64(3*ms), estimate(ms, 2))
	assert.Equal(t, int64(ms), estimate(ms, -1), "a negative count is 0")
	assert.Equal(t, int64(maxMean*6), estimate(math.MaxInt64/2, 5), "a mean past 18 minutes counts as 18 minutes")
	assert.Equal(t, int64(math.MaxInt64), estimate(maxMean, maxActive), "saturates")
	assert.Equal(t, int64(maxMean*maxActive), estimate(maxMean, maxActive-1), "the largest product, below 2^63")
	assert.Zero(t, estimate(0, 9))
}

// TestShortestMeanTimesCallsInFlight: Java's estimate, mean × (active +
// 1), decides; the fastest provider loses its calls once it has enough in
// flight.
func TestShortestMeanTimesCallsInFlight(t *testing.T) {
	b, c, list := fixture(2, nil)
	lbtest.Feed(list[0], c.NS, 10, time.Millisecond, false)   // A: 1 ms
	lbtest.Feed(list[1], c.NS, 10, 5*time.Millisecond, false) // B: 5 ms
	b.Select(list, lbtest.Call("Say"))                        // the window starts here
	lbtest.Feed(list[0], c.NS, 10, time.Millisecond, false)
	lbtest.Feed(list[1], c.NS, 10, 5*time.Millisecond, false)
	c.NS += int64(defaultRefresh)
	assert.Equal(t, []int{100, 0}, count(b, list, 100), "A: 1 ms × 1 < B: 5 ms × 1")

	inFlight(list[0], 5) // A: 1 ms × 6 > B: 5 ms × 1
	assert.Equal(t, []int{0, 100}, count(b, list, 100))
	inFlight(list[1], 1) // A: 6 ms, B: 10 ms
	assert.Equal(t, []int{100, 0}, count(b, list, 100))
}

// TestFailuresDoNotCount: only successful calls make the mean, as Java's
// getSucceededAverageElapsed.
func TestFailuresDoNotCount(t *testing.T) {
	b, c, list := fixture(2, nil)
	b.Select(list, lbtest.Call("Say"))
	lbtest.Feed(list[0], c.NS, 10, 2*time.Millisecond, false)
	lbtest.Feed(list[0], c.NS, 100, 100*time.Millisecond, true) // slow failures: ignored
	lbtest.Feed(list[1], c.NS, 10, 3*time.Millisecond, false)
	c.NS += int64(defaultRefresh)
	assert.Equal(t, []int{50, 0}, count(b, list, 50))
}

// TestTiesByWeight: equal estimates (here every provider unknown, as at
// start) are drawn in proportion to weight, as Java's draw among the
// shortest.
func TestTiesByWeight(t *testing.T) {
	b, _, _ := fixture(0, nil)
	list := lbtest.EjectionOff(lbtest.Weighted("100", "200", "100")...)
	const picks = 20000
	got := count(b, list, picks)
	for i, want := range []float64{25, 50, 25} {
		assert.InDelta(t, want, 100*float64(got[i])/picks, lbtest.Tol(want/100, picks), "provider %d: %v", i, got)
	}
}

// TestUnknownProviderIsProbedNotFlooded: a provider without a successful
// call gets the smallest known mean (Java: 0, so it would take every
// call until one succeeds), so its calls in flight still count.
func TestUnknownProviderIsProbedNotFlooded(t *testing.T) {
	b, c, list := fixture(3, nil)
	b.Select(list, lbtest.Call("Say"))
	lbtest.Feed(list[0], c.NS, 10, 2*time.Millisecond, false)
	lbtest.Feed(list[1], c.NS, 10, 8*time.Millisecond, false)
	c.NS += int64(defaultRefresh)
	inFlight(list[2], 3) // the new one: 2 ms × 4 = 8 ms; A: 2 ms
	assert.Equal(t, []int{100, 0, 0}, count(b, list, 100))
	inFlight(list[0], 3) // A: 8 ms, new: 8 ms, B: 8 ms: a three-way tie
	got := count(b, list, 3000)
	for i := range got {
		assert.InDelta(t, 1000, got[i], 200, "%v", got)
	}
}

// TestWindowSlides: after the slide period, a provider's mean is that of
// its calls in the new window; a provider without a call in the new window
// gets the smallest known mean, or its last window's mean when smaller, so
// that it is probed once per window (Java's falls to 0 and floods it).
func TestWindowSlides(t *testing.T) {
	b, c, list := fixture(3, map[string]string{slidePeriodKey: "2000"}) // Java's ms
	b.Select(list, lbtest.Call("Say"))
	lbtest.Feed(list[0], c.NS, 100, time.Millisecond, false)   // A: fast
	lbtest.Feed(list[1], c.NS, 100, 4*time.Millisecond, false) // B
	lbtest.Feed(list[2], c.NS, 100, 6*time.Millisecond, false) // C: idle after
	c.NS += int64(defaultRefresh)
	require.Equal(t, []int{10, 0, 0}, count(b, list, 10))

	c.NS += 2 * int64(time.Second) // the window slides
	b.Select(list, lbtest.Call("Say"))
	lbtest.Feed(list[0], c.NS, 10, 20*time.Millisecond, false) // A turns slow
	lbtest.Feed(list[1], c.NS, 10, 4*time.Millisecond, false)
	c.NS += int64(defaultRefresh)
	// A's old fast calls are out of the window (20 ms now); C, without a
	// call, is probed at B's 4 ms (its own 6 ms is larger): B and C tie.
	got := count(b, list, 100)
	assert.Zero(t, got[0], "A's old fast calls are out of the window: %v", got)
	assert.Positive(t, got[1], "%v", got)
	assert.Positive(t, got[2], "C is probed: %v", got)
	inFlight(list[1], 1) // B: 8 ms; C at 4 ms
	assert.Equal(t, []int{0, 0, 10}, count(b, list, 10))

	// C had no success in the window that ends: it is unknown now, and
	// gets the smallest known mean (B's 4 ms, A's is 20 ms), so it is
	// probed again; with B's call in flight (8 ms) C wins.
	c.NS += 2 * int64(time.Second)
	b.Select(list, lbtest.Call("Say"))
	lbtest.Feed(list[0], c.NS, 10, 20*time.Millisecond, false)
	lbtest.Feed(list[1], c.NS, 10, 4*time.Millisecond, false)
	c.NS += int64(defaultRefresh)
	v, _ := b.sk.View(list, "Say")
	b.Select(list, lbtest.Call("Say"))
	assert.Equal(t, int64(4*ms), v.Table.mean[2].Load(), "C: the smallest known mean")
	assert.Equal(t, []int{0, 0, 10}, count(b, list, 10))
}

// TestMeansRefreshOnThePeriod: a pick reads the means computed at most
// Refresh ago: completions in between show at the next refresh.
func TestMeansRefreshOnThePeriod(t *testing.T) {
	b, c, list := fixture(2, nil)
	b.Select(list, lbtest.Call("Say"))
	lbtest.Feed(list[0], c.NS, 10, time.Millisecond, false)
	lbtest.Feed(list[1], c.NS, 10, 3*time.Millisecond, false)
	c.NS += int64(defaultRefresh)
	require.Equal(t, []int{10, 0}, count(b, list, 10))
	lbtest.Feed(list[0], c.NS, 100, 50*time.Millisecond, false) // A's mean: 45.5 ms
	assert.Equal(t, []int{10, 0}, count(b, list, 10), "not yet read")
	c.NS += int64(defaultRefresh)
	assert.Equal(t, []int{0, 10}, count(b, list, 10))
}

func TestBadSlidePeriodWarnsAndDefaults(t *testing.T) {
	logs := lbtest.CaptureLogs(t)
	b, _, list := fixture(2, map[string]string{slidePeriodKey: "soon"})
	v, _ := b.sk.View(list, "Say")
	assert.Equal(t, int64(defaultSlidePeriod), v.Table.period)
	require.Len(t, logs(), 1)
	assert.Contains(t, logs()[0], `shortestresponse.slidePeriod "soon" is not a duration (30s, or Java's milliseconds); using 30s`)
}

// TestAmongSubset: a failover retry's subset gets the same rule.
func TestAmongSubset(t *testing.T) {
	b, c, list := fixture(3, nil)
	b.Select(list, lbtest.Call("Say"))
	for i, lat := range []time.Duration{time.Millisecond, 3 * time.Millisecond, 2 * time.Millisecond} {
		lbtest.Feed(list[i], c.NS, 10, lat, false)
	}
	c.NS += int64(defaultRefresh)
	b.Select(list, lbtest.Call("Say"))
	sub := []base.Invoker{list[1], list[2]}
	for range 20 {
		assert.Same(t, list[2], b.Select(sub, lbtest.Call("Say")))
	}
}

// TestConcurrentRefreshes: picks on four goroutines while the clock runs,
// so that refreshes rewrite and flip the sorted list under them: with the
// means steady, every pick is the fastest provider's (run with -race).
func TestConcurrentRefreshes(t *testing.T) {
	var now atomic.Int64
	now.Store(int64(time.Second))
	b := New(Options{Env: lbenv.Env{Now: now.Load}}) // the default source: safe for concurrent use
	list := lbtest.EjectionOff(lbtest.Weighted("100", "100", "100")...)
	for i, lat := range []time.Duration{3 * time.Millisecond, time.Millisecond, 2 * time.Millisecond} {
		lbtest.Feed(list[i], now.Load(), 10, lat, false)
	}
	// The snapshot first (built on this call: 3 providers), so that no
	// pick below is an interim one, made while it is built.
	require.Same(t, list[1], b.Select(list, lbtest.Call("Say")))
	var wg sync.WaitGroup
	wrong := make([]int, 4)
	for g := range wrong {
		wg.Go(func() {
			for k := range 2000 {
				if g == 0 && k%10 == 0 {
					now.Add(int64(defaultRefresh))
				}
				if b.Select(list, lbtest.Call("Say")) != list[1] {
					wrong[g]++
				}
			}
		})
	}
	wg.Wait()
	assert.Equal(t, []int{0, 0, 0, 0}, wrong)
}
