package rtadaptive

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/dubbogo-lb/lb/loadbalance/internal/lbtest"
	"github.com/dubbogo-lb/lb/loadbalance/lbenv"
	"github.com/dubbogo-lb/lb/rpcstatus"
)

// Described, each provider's cost is what a pick weighs: charged RTT ×
// (calls in flight + 1); a provider without samples has none, unless
// DefaultRTT gives it one.
func TestDescribeCosts(t *testing.T) {
	var clock atomic.Int64
	clock.Store(int64(10 * sec))
	list := lbtest.N(2)
	feed(list[0], int64(10*sec)-int64(5*ms), 5, 2*ms, false) // last sample at 10 s - 1 ms
	st := rpcstatus.Of(list[0].GetURL()).Method("Say")
	st.Begin(clock.Load())
	for _, c := range []struct {
		defaultRTT time.Duration
		unknown    float64
	}{{0, 0}, {3 * ms, 3}} {
		b := New(Options{DefaultRTT: c.defaultRTT, Env: lbenv.Env{Now: clock.Load}})
		b.Select(list, lbtest.Call("Say"))
		methods := b.Describe(clock.Load())
		assert.Len(t, methods, 1)
		ps := methods[0].Providers
		assert.InDelta(t, 4, ps[0].CostMs, 0.01, "2 ms × (1 in flight + 1)")
		assert.Equal(t, c.unknown, ps[1].CostMs)
		assert.Equal(t, 100.0, ps[0].Weight, "the warm weight")
	}
}
