package loadaware

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dubbogo-lb/lb/loadbalance/internal/algo"
	"github.com/dubbogo-lb/lb/loadbalance/internal/lbtest"
	"github.com/dubbogo-lb/lb/loadbalance/lbenv"
	"github.com/dubbogo-lb/lb/rpcstatus"
	"github.com/dubbogo-lb/lb/rpcstatus/loadreport"
)

// Hostile reports never make a cost or a weight NaN or infinite, under
// every cost function: one as the wire brings it (clamped by the parser)
// and one stored as is, with values that the parser would have clamped
// (a subnormal capacity and rate, a load near the float's limit), which
// the balancer's own guards must hold. The description marshals to JSON.
func TestHostileReportsKeepCostsFinite(t *testing.T) {
	for i, cost := range []Cost{CostCapacity, CostWRR, CostJava} {
		c := &lbtest.Nanos{NS: 1000 * sec}
		b := New(Options{Cost: cost, Blackout: time.Nanosecond, Env: lbenv.Env{Now: c.Now, Rand: algo.Seeded(uint64(7 + i)).Uint64}})
		l := lbtest.NoEjection(21700+10*i, 3, nil)
		for _, p := range l {
			lbtest.Feed(p, c.NS, 16, 10*time.Millisecond, false)
		}
		var wire loadreport.Report
		loadreport.Parse("cpu:1e-99,cap:1e-99,qps:1e-99,eps:1e12,load:1e-99", &wire)
		rpcstatus.Of(l[0].GetURL()).Load().Store(c.NS-1, &wire)
		raw := loadreport.Report{CPU: 1, Capacity: 1e-310, QPS: 1e-310, JavaLoad: 1e308, Has: loadreport.Own | loadreport.HasJavaLoad}
		rpcstatus.Of(l[1].GetURL()).Load().Store(c.NS-1, &raw)
		report(l[2], c.NS-1, 100, 0.5)
		c.NS += int64(defaultUpdatePeriod)
		lbtest.Counts(b, l, lbtest.Call("Say"), 100)

		v := view(t, b, l)
		require.False(t, v.Table.fallback.Load(), "%s: a provider has a usable report", cost)
		for k := range l {
			st := v.Stat(k)
			d, known := st.EWMA().Value(c.NS)
			got := b.cost(v, k, st, float64(d), known, 0)
			assert.True(t, algo.Finite(got), "%s: provider %d costs %v", cost, k, got)
			assert.True(t, algo.Finite(v.Table.value(k)), "%s: provider %d's value %v", cost, k, v.Table.value(k))
		}
		ms := b.Describe(c.NS)
		require.Len(t, ms, 1)
		for _, p := range ms[0].Providers {
			assert.True(t, algo.Finite(p.CostMs) && algo.Finite(p.Weight), "%s: %s cost %v weight %v", cost, p.Address, p.CostMs, p.Weight)
		}
		_, err := json.Marshal(ms)
		assert.NoError(t, err, "%s", cost)
	}
}

func TestFiniteCost(t *testing.T) {
	for _, c := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		assert.Equal(t, math.MaxFloat64, finiteCost(c), "%v", c)
	}
	assert.Equal(t, 2.5, finiteCost(2.5))
	assert.Equal(t, 0.0, finiteCost(0))
}
