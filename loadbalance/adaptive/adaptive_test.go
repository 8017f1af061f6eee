package adaptive

import (
	"math"
	"testing"
	"time"

	"dubbo.apache.org/dubbo-go/v3/protocol/base"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dubbogo-lb/lb/internal/urlparam"
	"github.com/dubbogo-lb/lb/loadbalance/internal/algo"
	"github.com/dubbogo-lb/lb/loadbalance/internal/lbtest"
	"github.com/dubbogo-lb/lb/loadbalance/lbenv"
	"github.com/dubbogo-lb/lb/rpcstatus"
	"github.com/dubbogo-lb/lb/rpcstatus/loadreport"
)

// fixture returns a balancer on a driven clock and two providers (ejection
// off) with params.
func fixture(params map[string]string, weights ...string) (*Balancer, *lbtest.Nanos, []base.Invoker) {
	c := &lbtest.Nanos{NS: int64(time.Minute)}
	b := New(Options{Env: lbenv.Env{Now: c.Now, Rand: algo.Seeded(3).Uint64}})
	if len(weights) == 0 {
		weights = []string{"100", "100"}
	}
	list := lbtest.NoEjection(22000, len(weights), params)
	for i, w := range weights {
		list[i].GetURL().SetParam("weight", w)
	}
	return b, c, list
}

// report stores a Java load report of load percent on p at now.
func report(p base.Invoker, now int64, load float64) {
	r := loadreport.Report{JavaLoad: load, Has: loadreport.HasJavaLoad}
	rpcstatus.Of(p.GetURL()).Load().Store(now, &r)
}

func counts(b *Balancer, list []base.Invoker, picks int) []int {
	return lbtest.Counts(b, list, lbtest.Call("Say"), picks)
}

func TestCost(t *testing.T) {
	// Java's formula: 50 × (√4 + 1) × (1 + 1) / (0.5 × 100 + 1).
	assert.InDelta(t, 50*3*2/51.0, javaCost(50, 4, 1, 0.5, 100), 1e-12)
	assert.Equal(t, math.MaxFloat64, javaCost(math.Inf(1), 1, 0, 1, 100))
	assert.Equal(t, math.MaxFloat64, javaCost(math.NaN(), 1, 0, 1, 100))
	assert.Less(t, javaCost(0, 1, 0, 1, 100), javaCost(0, 1, 1, 1, 100), "without a report the calls in flight still count")
}

// TestLowerLoadWins: the reported load decides between equal providers.
func TestLowerLoadWins(t *testing.T) {
	b, c, list := fixture(nil)
	report(list[0], c.NS, 80)
	report(list[1], c.NS, 20)
	assert.Equal(t, []int{0, 200}, counts(b, list, 200))
}

// TestSlowerRTTLoses: the consumer's own latency of each provider counts
// as √ms, the provider's report does not (Java's bug 15810 makes it look
// fastest).
func TestSlowerRTTLoses(t *testing.T) {
	b, c, list := fixture(nil)
	report(list[0], c.NS, 30)
	report(list[1], c.NS, 30)
	lbtest.Feed(list[0], c.NS-int64(50*time.Millisecond), 20, 40*time.Millisecond, false)
	lbtest.Feed(list[1], c.NS-int64(50*time.Millisecond), 20, time.Millisecond, false)
	assert.Equal(t, []int{0, 200}, counts(b, list, 200))
}

// TestCallsInFlightCount: a provider with calls in flight costs (n + 1)
// times as much.
func TestCallsInFlightCount(t *testing.T) {
	b, c, list := fixture(nil)
	report(list[0], c.NS, 10)
	report(list[1], c.NS, 25) // 2.5 × provider 0's load
	pr := rpcstatus.Of(list[0].GetURL())
	for range 3 { // provider 0: 4 × 10 = 40 > 25
		pr.Begin(pr.Method("Say"), c.NS)
	}
	assert.Equal(t, []int{0, 100}, counts(b, list, 100))
}

// TestTiesFollowWeights: equal costs (no report, no latency yet) are drawn
// in proportion to weight, as Java's chooseLowLoadInvoker.
func TestTiesFollowWeights(t *testing.T) {
	logs := lbtest.CaptureLogs(t) // no call is counted: the missing-filter WARN
	b, _, list := fixture(nil, "100", "300")
	// Weight is in the cost too: success ratio 0 while no call ended
	// makes it (0 × w + 1), so the costs stay equal.
	const picks = 20000
	got := counts(b, list, picks)
	assert.InDelta(t, 25, 100*float64(got[0])/picks, lbtest.Tol(0.25, picks), "%v", got)
	assert.Len(t, logs(), 1)
}

// TestUnpickedProviderIsTriedAgain: Java's mandatory selection, a provider
// not picked for twice its timeout costs 0 for one pick.
func TestUnpickedProviderIsTriedAgain(t *testing.T) {
	b, c, list := fixture(map[string]string{"timeout": "1s"})
	report(list[0], c.NS, 10)
	report(list[1], c.NS, 90)
	require.Equal(t, []int{50, 0}, counts(b, list, 50))
	c.NS += int64(2*time.Second) + 1 // provider 1 not picked for 2 × 1 s
	report(list[0], c.NS, 10)
	report(list[1], c.NS, 90)
	assert.Equal(t, []int{0, 1}, counts(b, list, 1), "provider 1 is tried")
	assert.Equal(t, []int{50, 0}, counts(b, list, 50), "then its load counts again")
}

// TestDrainedLosesTheDraw: a drained provider (weight 0) is picked only
// when the other is drained too.
func TestDrainedLosesTheDraw(t *testing.T) {
	b, c, list := fixture(nil)
	list[0].GetURL().SetParam(urlparam.WeightFactorKey, "0") // drained in the Nacos console
	report(list[0], c.NS, 1)
	report(list[1], c.NS, 99)
	assert.Equal(t, []int{0, 100}, counts(b, list, 100))
}

// TestAmongSubset: a failover retry's subset gets the same rule.
func TestAmongSubset(t *testing.T) {
	b, c, list := fixture(nil, "100", "100", "100")
	for i, l := range []float64{10, 90, 30} {
		report(list[i], c.NS, l)
	}
	b.Select(list, lbtest.Call("Say"))
	sub := []base.Invoker{list[1], list[2]}
	for range 20 {
		assert.Same(t, list[2], b.Select(sub, lbtest.Call("Say")))
	}
}
