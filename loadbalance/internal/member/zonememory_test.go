package member

import (
	"math"
	"testing"
	"time"

	"dubbo.apache.org/dubbo-go/v3/protocol/base"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dubbogo-lb/lb/loadbalance/internal/lbtest"
	"github.com/dubbogo-lb/lb/loadbalance/internal/zone"
	"github.com/dubbogo-lb/lb/rpcstatus"
	"github.com/dubbogo-lb/lb/warmup"
)

// With no callers configured, a zone that loses half its providers keeps
// its callers: zones of 6, 4 and 2 providers, the consumer in the first;
// three of its providers leave, and it keeps Envoy's 3/9 ÷ 6/12 = 2/3 of
// its calls at home, spilling a third. The memory decays: after ten
// half-lives the smaller zone is the fleet as provisioned, and every call
// stays home. The snapshot refreshes by itself meanwhile. Negative control:
// with lb.zone.memory=0 the callers shrink with the providers, and
// nothing spills.
func TestAZoneThatLosesProvidersKeepsItsCallers(t *testing.T) {
	run := func(port int, memory string) (shrunk, decayed float64, refreshes int64) {
		clock := lbtest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		r := NewRegistry(warmup.Options{}, clock.Now, func(*Set, *View[table]) *table { return &table{} })
		consumer := map[string]string{zone.LocalKey: "a"}
		if memory != "" {
			consumer[zone.MemoryKey] = memory
		}
		full := lbtest.Zoned(port, []string{"a", "b", "c"}, []int{6, 4, 2}, consumer)
		v, _ := r.Find(full, "Say")
		require.NotNil(t, v.Zoning)
		require.Equal(t, zone.Direct, v.Zoning.Plan.Mode, "balanced zones")
		clock.Advance(time.Second)
		half := append(append([]base.Invoker(nil), full[:3]...), full[6:]...)
		v = settle(r, half)
		shrunk = v.Zoning.Plan.LocalShare
		before := r.refreshes.Load()
		for range 80 { // ten half-lives of 10 min, in steps of a half-life's eighth
			clock.Advance(75 * time.Second)
			v, _ = r.Find(half, "Say")
		}
		return shrunk, v.Zoning.Plan.LocalShare, r.refreshes.Load() - before
	}
	shrunk, decayed, refreshes := run(31000, "")
	assert.InDelta(t, 2.0/3, shrunk, 0.002, "the home zone keeps Envoy's share of its callers' calls")
	assert.InDelta(t, 1, decayed, 1e-9, "after ten half-lives the shrunk zone carries its callers")
	assert.Positive(t, refreshes, "the plan follows the decay without a change of membership")

	t.Run("negative_control_no_memory", func(t *testing.T) {
		shrunk, _, _ := run(31100, "0")
		assert.Equal(t, 1.0, shrunk, "without memory the callers shrink with the zone")
	})
}

// A zone whose providers have all left keeps counting among the callers
// while it is remembered, and is never chosen: with zones a (the
// consumer's, 4 providers), b (4) and c (4), c leaving makes a and b carry
// c's callers: a's share of the callers is 4/12, of the capacity 4/8, so
// it keeps every call (Direct); a then losing two providers keeps 2/6 ÷
// 4/12 = 100 %... and b gone instead spills: a carries 4/4 of the
// capacity for 4/12 of the callers. No pick lands in a zone with no
// provider.
func TestADepartedZoneIsRememberedNotChosen(t *testing.T) {
	clock := lbtest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	r := NewRegistry(warmup.Options{}, clock.Now, func(*Set, *View[table]) *table { return &table{} })
	full := lbtest.Zoned(31200, []string{"a", "b", "c"}, []int{4, 4, 4}, map[string]string{zone.LocalKey: "a"})
	_, _ = r.Find(full, "Say")
	clock.Advance(time.Second)
	v := settle(r, full[:8]) // c leaves
	require.NotNil(t, v.Zoning)
	assert.Equal(t, []string{"a", "b", "c"}, v.Zoning.Names, "c is remembered")
	assert.Nil(t, v.Zoning.Views[2], "with no provider")
	for u := uint64(0); u < 1<<16; u++ {
		if z := v.Zoning.Plan.Choose(u * 0x9e3779b97f4a7c15); z < 0 || z > 1 {
			t.Fatalf("zone %d chosen", z)
		}
	}
	assert.False(t, math.IsNaN(v.Zoning.Plan.LocalShare))
}

// settle returns the snapshot of list, past the lookups that take a
// shorter list for a retry's subset of the snapshot before.
func settle(r *Registry[table], list []base.Invoker) *View[table] {
	for {
		if v, m := r.Find(list, "Say"); m == Exact {
			return v
		}
	}
}

// A zone's capacity counts what serves: zones of 6, 4 and 2 providers,
// the consumer in the first, three of whose providers fail FailingRun
// times in a row (ejection, capped at 10 % of the twelve, takes out one).
// The zone then counts 3 × 1.4 of its 6 for half of the callers and keeps
// (4.2 / 10.2) ÷ (6 / 12) of its calls, spilling the rest; once each of
// the three answers a call, the snapshot refreshes by itself within
// FailingRefresh and every call stays home. Negative control: runs one
// failure shorter leave the zone whole.
func TestAZoneWithFailingProvidersSpills(t *testing.T) {
	run := func(port int, failures int) (failing, recovered float64) {
		clock := lbtest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		r := NewRegistry(warmup.Options{}, clock.Now, func(*Set, *View[table]) *table { return &table{} })
		list := lbtest.Zoned(port, []string{"a", "b", "c"}, []int{6, 4, 2}, map[string]string{zone.LocalKey: "a"})
		v, _ := r.Find(list, "Say")
		require.Equal(t, zone.Direct, v.Zoning.Plan.Mode, "balanced zones")
		now := int64(time.Second)
		v.Board().WakeAt(now) // the snapshot is rebuilt after the failures, however many
		for i := 3; i < 6; i++ {
			for range failures {
				now += int64(time.Millisecond)
				v.Stat(i).Judge(now, true, rpcstatus.NoCode)
			}
		}
		before := v
		v, _ = r.Find(list, "Say")
		require.NotSame(t, before, v, "rebuilt")
		failing = v.Zoning.Plan.LocalShare
		for i := 3; i < 6; i++ {
			v.Stat(i).Judge(now, false, 0)
		}
		clock.Advance(FailingRefresh)
		v, _ = r.Find(list, "Say")
		return failing, v.Zoning.Plan.LocalShare
	}
	failing, recovered := run(31300, FailingRun)
	assert.InDelta(t, (4.2/10.2)/0.5, failing, 1e-9, "the zone's failing providers count for no capacity")
	assert.Equal(t, 1.0, recovered, "back home once they answer")

	t.Run("negative_control_shorter_runs", func(t *testing.T) {
		failing, _ := run(31400, FailingRun-1)
		assert.Equal(t, 1.0, failing, "runs shorter than FailingRun count as serving")
	})
}
