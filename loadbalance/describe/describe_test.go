package describe_test

import (
	"math"
	"strconv"
	"sync"
	"testing"
	"time"

	"dubbo.apache.org/dubbo-go/v3/protocol/base"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dubbogo-lb/lb/loadbalance/describe"
	"github.com/dubbogo-lb/lb/loadbalance/internal/algo"
	"github.com/dubbogo-lb/lb/loadbalance/internal/lbtest"
	"github.com/dubbogo-lb/lb/loadbalance/lbenv"
	"github.com/dubbogo-lb/lb/loadbalance/warmrandom"
	"github.com/dubbogo-lb/lb/rpcstatus"
)

// threeProviders returns a provider of weight 100, one of weight 300
// halfway through a 10-minute warmup at wall, and a drained one (weight
// 0 from a Java provider, where 0 means 0).
func threeProviders(wall time.Time) []base.Invoker {
	return []base.Invoker{
		lbtest.Provider(20000, map[string]string{"weight": "100"}),
		lbtest.Provider(20001, map[string]string{"weight": "300",
			"timestamp": strconv.FormatInt(wall.Add(-5*time.Minute).Unix(), 10), "warmup": "600"}),
		lbtest.Provider(20002, map[string]string{"weight": "0", "release": "3.3.6"}),
	}
}

// Everything a snapshot says of a balancer's providers comes from the
// balancer's snapshot and the providers' statistics.
func TestSnapshotOfABalancer(t *testing.T) {
	wall := lbtest.NewClock(time.Unix(1_700_000_000, 0))
	lb := warmrandom.New(warmrandom.Options{Env: lbenv.Env{Wall: wall.Now, Rand: algo.Seeded(1).Uint64}})
	list := threeProviders(wall.Now())
	counts := lbtest.Counts(lb, list, lbtest.Call("Say"), 1000)
	require.Zero(t, counts[2], "a drained provider gets no picks")

	ms := int64(time.Millisecond)
	lbtest.Feed(list[0], 100*ms, 10, 2*time.Millisecond, false) // ends at 111 ms
	lbtest.Feed(list[1], 100*ms, 4, 4*time.Millisecond, true)
	pr := rpcstatus.Of(list[0].GetURL())
	pr.Begin(pr.Method("Say"), 111*ms) // in flight

	clock := lbtest.Nanos{NS: 111 * ms}
	reg := describe.New(describe.Options{Now: clock.Now})
	reg.Register(warmrandom.Name, lb)
	snap := reg.Snapshot()
	require.Len(t, snap.Balancers, 1)
	b := snap.Balancers[0]
	assert.Equal(t, warmrandom.Name, b.Name)
	assert.Equal(t, describe.Rebuilds{Membership: 1}, b.Rebuilds)
	require.Len(t, b.Methods, 1)
	m := b.Methods[0]
	assert.Equal(t, lbtest.Service, m.Service)
	assert.Equal(t, lbtest.Service, m.Interface)
	assert.Equal(t, "Say", m.Method)
	assert.Zero(t, m.ShareSeconds, "the first snapshot: shares of every pick")
	require.Len(t, m.Providers, 3)

	want := []struct {
		addr     string
		state    describe.State
		weight   float64
		inFlight int64
		calls    int64
		failures int64
		latency  float64
	}{
		{"127.0.0.1:20000", describe.StateOK, 100, 1, 10, 0, 2},
		{"127.0.0.1:20001", describe.StateWarming, 150, 0, 4, 4, 4},
		{"127.0.0.1:20002", describe.StateDrained, 0, 0, 0, 0, 0},
	}
	for i, w := range want {
		p := m.Providers[i]
		assert.Equal(t, w.addr, p.Address)
		assert.Equal(t, w.state, p.State, w.addr)
		assert.InDelta(t, w.weight, p.Weight, 1e-9, w.addr)
		assert.EqualValues(t, counts[i], p.Picks, w.addr)
		assert.InDelta(t, float64(counts[i])/1000, p.Share, 1e-12, w.addr)
		assert.Equal(t, w.inFlight, p.InFlight, w.addr)
		assert.Equal(t, w.calls, p.Calls, w.addr)
		assert.Equal(t, w.failures, p.Failures, w.addr)
		// The peak EWMA of equal samples is the sample, read within a
		// few ms of the last one (10 s decay).
		assert.InDelta(t, w.latency, p.LatencyMs, 0.01, w.addr)
		assert.Same(t, list[i].GetURL(), p.URL)
		assert.Same(t, rpcstatus.Of(list[i].GetURL()).Method("Say"), p.Stats)
	}

	// A warmup refresh is a rebuild of its own kind.
	wall.Advance(time.Second)
	lb.Select(list, lbtest.Call("Say"))
	assert.Equal(t, describe.Rebuilds{Membership: 1, Warmup: 1}, reg.Snapshot().Balancers[0].Rebuilds)
}

// A provider that leaves (dubbo-go destroys its invoker) leaves the
// snapshot at once, before any Select sees the new list; a (service,
// method) whose providers all left is not described.
func TestDepartedProvidersLeave(t *testing.T) {
	lb := warmrandom.New(warmrandom.Options{Env: lbenv.Env{Rand: algo.Seeded(1).Uint64}})
	list := lbtest.N(3)
	lbtest.Counts(lb, list, lbtest.Call("Say"), 10)
	reg := describe.New(describe.Options{})
	reg.Register(warmrandom.Name, lb)
	require.Len(t, reg.Snapshot().Balancers[0].Methods[0].Providers, 3)

	list[1].Destroy()
	ps := reg.Snapshot().Balancers[0].Methods[0].Providers
	require.Len(t, ps, 2)
	assert.Equal(t, "127.0.0.1:20000", ps[0].Address)
	assert.Equal(t, "127.0.0.1:20002", ps[1].Address)

	// The list without it, Select after Select (once, it could be a
	// failover retry's subset): a change of membership, rebuilt.
	lbtest.Counts(lb, []base.Invoker{list[0], list[2]}, lbtest.Call("Say"), 20)
	assert.Equal(t, describe.Rebuilds{Membership: 2}, reg.Snapshot().Balancers[0].Rebuilds)

	list[0].Destroy()
	list[2].Destroy()
	assert.Empty(t, reg.Snapshot().Balancers[0].Methods)
}

// fakeSource describes one (service, method) with the picks it is given.
type fakeSource struct {
	picks   map[string]int64
	methods []string
}

func (f *fakeSource) Describe(int64) []describe.Method {
	var out []describe.Method
	for _, name := range f.methods {
		m := describe.Method{Service: "svc", Method: name}
		for _, addr := range []string{"a", "b"} {
			m.Providers = append(m.Providers, describe.Provider{Address: addr, Picks: f.picks[addr]})
		}
		out = append(out, m)
	}
	return out
}

func (f *fakeSource) Rebuilds() describe.Rebuilds { return describe.Rebuilds{Membership: 7} }

// shares returns the shares and the time they cover of the one method.
func shares(t *testing.T, reg *describe.Registry) (a, b, seconds float64) {
	t.Helper()
	ms := reg.Snapshot().Balancers[0].Methods
	require.Len(t, ms, 1)
	return ms[0].Providers[0].Share, ms[0].Providers[1].Share, ms[0].ShareSeconds
}

// Shares cover the picks since the snapshot about a window before: the
// youngest one at least a window old, else the oldest.
func TestSharesCoverTheWindow(t *testing.T) {
	var clock lbtest.Nanos
	reg := describe.New(describe.Options{Now: clock.Now, Window: 10 * time.Second}) // a sample a second
	src := &fakeSource{picks: map[string]int64{"a": 10}, methods: []string{"m"}}
	reg.Register("x", src)

	a, b, s := shares(t, reg) // t=0: every pick so far
	assert.Equal(t, []float64{1, 0, 0}, []float64{a, b, s})

	clock.NS = int64(time.Second)
	src.picks["b"] = 30
	a, b, s = shares(t, reg) // since t=0: a 0, b 30
	assert.Equal(t, []float64{0, 1, 1}, []float64{a, b, s})

	clock.NS = int64(1500 * time.Millisecond) // within a second of the last sample: not recorded
	src.picks["a"] = 40
	a, b, s = shares(t, reg) // since t=0: a 30, b 30
	assert.Equal(t, []float64{0.5, 0.5, 1.5}, []float64{a, b, s})

	clock.NS = int64(12 * time.Second)
	src.picks["a"] = 130
	a, b, s = shares(t, reg) // samples at 0 and 1 s: since 1 s, a 120, b 0
	assert.Equal(t, []float64{1, 0, 11}, []float64{a, b, s})

	clock.NS = int64(13 * time.Second)
	src.picks["b"] = 5       // b's counter started again (re-registered): 5 since
	a, b, s = shares(t, reg) // the 0 s sample is gone: since 1 s, a 120, b 5
	assert.Equal(t, []float64{0.96, 0.04, 12}, []float64{a, b, s})

	// Sparse snapshots (at 13, 40 and 45 s): the base is the youngest
	// sample at least a window old, 13 s, however old. No picks since:
	// every share 0.
	clock.NS = int64(40 * time.Second)
	shares(t, reg)
	clock.NS = int64(45 * time.Second)
	a, b, s = shares(t, reg)
	assert.Equal(t, []float64{0, 0, 32}, []float64{a, b, s})

	// A (service, method) no longer served loses its history.
	src.methods = nil
	assert.Empty(t, reg.Snapshot().Balancers[0].Methods)
	src.methods = []string{"m"}
	_, _, s = shares(t, reg)
	assert.Zero(t, s, "described again: from scratch")
}

func TestRegisterKeepsOrderAndReplaces(t *testing.T) {
	reg := describe.New(describe.Options{})
	first, second := &fakeSource{}, &fakeSource{methods: []string{"m"}}
	reg.Register("b", first)
	reg.Register("a", first)
	reg.Register("b", second)
	snap := reg.Snapshot()
	require.Len(t, snap.Balancers, 2)
	assert.Equal(t, "b", snap.Balancers[0].Name)
	assert.Len(t, snap.Balancers[0].Methods, 1, "replaced by the second source")
	assert.Equal(t, "a", snap.Balancers[1].Name)
	assert.Equal(t, int64(7), snap.Balancers[1].Rebuilds.Membership)
}

// Snapshots taken while callers select, and the membership changes under
// them, see consistent figures (run with -race), and no pick is lost.
func TestSnapshotWhileSelecting(t *testing.T) {
	lb := warmrandom.New(warmrandom.Options{})
	all := lbtest.N(4)
	lists := [][]base.Invoker{all, all[:3], all[1:]}
	reg := describe.New(describe.Options{})
	reg.Register(warmrandom.Name, lb)
	const callers, picks = 2, 3000
	var wg sync.WaitGroup
	for g := range callers {
		wg.Go(func() {
			for i := range picks {
				lb.Select(lists[(i/100+g)%len(lists)], lbtest.Call("Say"))
			}
		})
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 50 {
			for _, m := range reg.Snapshot().Balancers[0].Methods {
				sum := 0.0
				for _, p := range m.Providers {
					sum += p.Share
				}
				assert.True(t, sum == 0 || math.Abs(sum-1) < 1e-9, "shares add up to %v", sum)
			}
		}
	}()
	wg.Wait()
	<-done
	var total int64
	for _, inv := range all {
		total += rpcstatus.Of(inv.GetURL()).Method("Say").Picks()
	}
	assert.EqualValues(t, callers*picks, total)
}
