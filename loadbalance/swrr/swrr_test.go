package swrr

import (
	"slices"
	"testing"
	"time"

	"dubbo.apache.org/dubbo-go/v3/protocol/base"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dubbogo-lb/lb/loadbalance/internal/algo"
	"github.com/dubbogo-lb/lb/loadbalance/internal/lbtest"
	"github.com/dubbogo-lb/lb/loadbalance/lbenv"
)

// picks returns the positions in list of n successive picks.
func picks(b *Balancer, list []base.Invoker, inv base.Invocation, n int) []int {
	out := make([]int, n)
	for k := range out {
		got := b.Select(list, inv)
		out[k] = slices.Index(list, got)
		if out[k] < 0 {
			panic("pick outside the list")
		}
	}
	return out
}

// rotation returns r such that seq[k] == cycle[(r+k) % len(cycle)] for
// every k, or -1.
func rotation(seq, cycle []int) int {
	for r := range cycle {
		ok := true
		for k, x := range seq {
			if x != cycle[(r+k)%len(cycle)] {
				ok = false
				break
			}
		}
		if ok {
			return r
		}
	}
	return -1
}

var aabacaa = []int{0, 0, 1, 0, 2, 0, 0}

// seeded returns Options with a deterministic random source.
func seeded(seed uint64) Options { return Options{Env: lbenv.Env{Rand: algo.Seeded(seed).Uint64}} }

func TestNginxCycle(t *testing.T) {
	b := New(seeded(5))
	got := picks(b, lbtest.Weighted("5", "1", "1"), lbtest.Call("Say"), 70)
	assert.NotEqual(t, -1, rotation(got, aabacaa), "A A B A C A A, from some point: %v", got)
}

// Interleaved calls of two methods, and of two groups of one interface,
// each follow their own cycle: state shared between them would break it.
func TestSeparateSequencesPerMethodAndGroup(t *testing.T) {
	b := New(seeded(6))
	list := lbtest.Weighted("5", "1", "1")
	g1 := make([]base.Invoker, 3)
	g2 := make([]base.Invoker, 3)
	for i, w := range []string{"5", "1", "1"} {
		g1[i] = lbtest.Provider(20000+i, map[string]string{"weight": w, "group": "g1"})
		g2[i] = lbtest.Provider(20000+i, map[string]string{"weight": w, "group": "g2"})
	}
	streams := []struct {
		list   []base.Invoker
		method string
	}{{list, "Say"}, {list, "Other"}, {g1, "Say"}, {g2, "Say"}}
	got := make([][]int, len(streams))
	for range 70 {
		for i, s := range streams {
			got[i] = append(got[i], picks(b, s.list, lbtest.Call(s.method), 1)[0])
		}
	}
	for i := range streams {
		assert.NotEqual(t, -1, rotation(got[i], aabacaa), "stream %d: %v", i, got[i])
	}
}

// Each consumer starts its cycle at a position its random source draws:
// the same seed, the same start; 20 seeds, starts all over the list.
func TestRandomStartPerConsumer(t *testing.T) {
	list := lbtest.N(10)
	first := map[int]int{}
	for seed := range uint64(20) {
		got := picks(New(seeded(seed)), list, lbtest.Call("Say"), 1)[0]
		assert.Equal(t, got, picks(New(seeded(seed)), list, lbtest.Call("Say"), 1)[0], "seed %d", seed)
		first[got]++
	}
	assert.Len(t, first, 8, "distinct first picks of 20 consumers (seeds 0-19): %v", first)
}

// Warm weights recomputed while the picks go on: every window of picks gets
// what the weights in force say, within a couple of picks.
func TestWarmupChangesStaySmooth(t *testing.T) {
	start := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	clock := lbtest.NewClock(start.Add(30 * time.Second))
	b := New(Options{Env: lbenv.Env{Wall: clock.Now, Rand: algo.Seeded(2).Uint64}})
	list := startedAt(start.Add(-time.Hour), start.Add(-time.Hour), start, start.Add(-100*time.Second))
	inv := lbtest.Call("Say")
	var got []int
	var due [][]float64
	for range 6000 {
		clock.Advance(100 * time.Millisecond) // a refresh before every pick
		got = append(got, picks(b, list, inv, 1)[0])
		v, exact := b.sk.View(list, "Say")
		require.True(t, exact)
		due = append(due, shares(v.Table.weights))
	}
	ex, short := burst(got, due)
	t.Logf("largest excess %.2f, shortfall %.2f picks", slices.Max(ex), slices.Max(short))
	for i := range list {
		assert.Less(t, ex[i], 4.0, "provider %d excess", i)
		assert.Less(t, short[i], 4.0, "provider %d shortfall", i)
	}
	// Weights did change along the way.
	assert.NotEqual(t, due[0], due[len(due)-1])
}

// Round robin makes the warmup shares exact over whole cycles: 10:100 at
// 60 s of 600 s, 50:100 half way, 100:100 once warm. After a refresh the
// cycle follows the old one, so counting starts one cycle later.
func TestWarmupThroughMergedNacosURL(t *testing.T) {
	start := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	clock := lbtest.NewClock(start.Add(60 * time.Second))
	b := New(Options{Env: lbenv.Env{Wall: clock.Now, Rand: algo.Seeded(1).Uint64}})
	list := startedAt(start.Add(-time.Hour), start) // the second is up 60 s of 600 s
	inv := lbtest.Call("Say")
	c := lbtest.Counts(b, list, inv, 11*100)
	assert.Equal(t, []int{1000, 100}, c, "10 %% of a warm peer's traffic")

	clock.Advance(240 * time.Second) // half way
	lbtest.Counts(b, list, inv, 3)
	c = lbtest.Counts(b, list, inv, 3*100)
	assert.Equal(t, []int{200, 100}, c)

	clock.Advance(time.Hour)
	lbtest.Counts(b, list, inv, 2)
	c = lbtest.Counts(b, list, inv, 2*100)
	assert.Equal(t, []int{100, 100}, c)
}

func TestMembershipChanges(t *testing.T) {
	b := New(seeded(3))
	inv := lbtest.Call("Say")
	list := lbtest.Weighted("5", "1", "1", "3")
	picks(b, list, inv, 5)

	// D leaves: never picked again, the others keep 5:1:1. (The first
	// calls without D count as failover retries, drawn at random, until the
	// registry takes the smaller list as the new membership.)
	gone := list[:3]
	got := picks(b, gone, inv, 7000)
	assert.InDeltaSlice(t, []float64{5000, 1000, 1000}, floats(counts(got, 3)), 16)
	got = picks(b, gone, inv, 7000)
	assert.InDeltaSlice(t, []float64{5000, 1000, 1000}, floats(counts(got, 3)), 4, "the debts carried over, no more")
	v, _ := b.sk.View(gone, "Say")
	assert.Equal(t, []int64{5, 1, 1}, v.Table.weights)

	// E joins with weight 2: its share from the next pick on.
	joined := append(append([]base.Invoker(nil), gone...), lbtest.Provider(20009, map[string]string{"weight": "2"}))
	got = picks(b, joined, inv, 9000)
	assert.InDeltaSlice(t, []float64{5000, 1000, 1000, 2000}, floats(counts(got, 4)), 4)
	v, _ = b.sk.View(joined, "Say")
	assert.Equal(t, []int64{5, 1, 1, 2}, v.Table.weights)
}

func floats(c []int) []float64 {
	out := make([]float64, len(c))
	for i, x := range c {
		out[i] = float64(x)
	}
	return out
}

func counts(picks []int, n int) []int {
	out := make([]int, n)
	for _, p := range picks {
		out[p]++
	}
	return out
}

// The conformance suite checks every bad input for safety; round robin
// makes the shares exact.
func TestBadInputSharesAreExact(t *testing.T) {
	b := New(seeded(4))
	inv := lbtest.Call("Say")
	// Malformed weights fall back to the default, 100, like a healthy peer:
	// every cycle of 5 serves each once.
	c := lbtest.Counts(b, lbtest.Weighted("abc", "-5", "1e99", "NaN", "100"), inv, 5*200)
	assert.Equal(t, []int{200, 200, 200, 200, 200}, c)

	// Every provider drained: exactly even.
	drained := func(port int) base.Invoker {
		return lbtest.Provider(port, map[string]string{"weight": "0", "release": "java-3.2"})
	}
	c = lbtest.Counts(b, []base.Invoker{drained(20000), drained(20001)}, inv, 1_000)
	assert.Equal(t, []int{500, 500}, c)
}

// startedAt returns providers of weight 100 with a warmup of 600 s that
// started at the given times, on ports 20000, 20001, …
func startedAt(at ...time.Time) []base.Invoker {
	out := make([]base.Invoker, len(at))
	for i, t := range at {
		out[i] = lbtest.Started(20000+i, t, 600*time.Second)
	}
	return out
}
