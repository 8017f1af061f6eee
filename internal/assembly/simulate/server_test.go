package simulate_test

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/dubbogo-lb/lb/internal/assembly/simulate"
)

func TestStepsChangeAtTheirTimes(t *testing.T) {
	f := simulate.Steps([]string{"a", "b", "c"}, 2*time.Second, 5*time.Second)
	for _, c := range []struct {
		now  int64
		want string
	}{{0, "a"}, {2e9 - 1, "a"}, {2e9, "b"}, {5e9 - 1, "b"}, {5e9, "c"}, {math.MaxInt64, "c"}} {
		assert.Equal(t, c.want, f(c.now), "at %d", c.now)
	}
	assert.Equal(t, 7, simulate.Constant(7)(123))
	assert.Panics(t, func() { simulate.Steps([]int{1}, time.Second) })
}

// Four calls arrive at once at two workers of 10 ms: two are served at
// once, the next two wait for them in arrival order.
func TestModelQueuesForItsWorkers(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	srv := simulate.Model{Latency: simulate.Constant(10 * time.Millisecond), Workers: 2}.Server()
	var ends []int64
	for range 4 {
		end, fail := srv(0, rng)
		assert.False(t, fail)
		ends = append(ends, end)
	}
	assert.Equal(t, []int64{10 * ms, 10 * ms, 20 * ms, 20 * ms}, ends)
	// No limit: a pure delay.
	free := simulate.Model{Latency: simulate.Constant(10 * time.Millisecond)}.Server()
	for range 4 {
		end, _ := free(0, rng)
		assert.Equal(t, 10*ms, end)
	}
}

// WorkersAt narrows the workers a call may use: one of three from 1 s on,
// so calls arriving then queue behind each other.
func TestModelCapacityChanges(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	srv := simulate.Model{
		Latency:   simulate.Constant(10 * time.Millisecond),
		Workers:   3,
		WorkersAt: simulate.Steps([]int{3, 0}, time.Second), // 0 counts as 1
	}.Server()
	at := int64(time.Second)
	var ends []int64
	for range 3 {
		end, _ := srv(at, rng)
		ends = append(ends, end-at)
	}
	assert.Equal(t, []int64{10 * ms, 20 * ms, 30 * ms}, ends)
}

// The service time's spread: within ±Jitter, and the mean of Exp.
func TestModelSpread(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	d := 10 * time.Millisecond
	jittered := simulate.Model{Latency: simulate.Constant(d), Jitter: 0.2}.Server()
	exp := simulate.Model{Latency: simulate.Constant(d), Exp: true}.Server()
	const n = 20_000
	lo, hi, sum := int64(math.MaxInt64), int64(0), 0.0
	for range n {
		end, _ := jittered(0, rng)
		lo, hi = min(lo, end), max(hi, end)
		e, _ := exp(0, rng)
		sum += float64(e)
	}
	assert.GreaterOrEqual(t, lo, 8*ms)
	assert.LessOrEqual(t, hi, 12*ms)
	assert.Less(t, lo, 8*ms+ms/10, "the spread reaches its bounds")
	assert.Greater(t, hi, 12*ms-ms/10, "the spread reaches its bounds")
	// The exponential's standard deviation is its mean: 4 standard errors.
	assert.InDelta(t, float64(d), sum/n, 4*float64(d)/math.Sqrt(n))
}

// ErrorRate fails its share of calls, counted against the binomial's
// spread, and a rate of 0 takes no draw from the source.
func TestModelFailsAtItsErrorRate(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	served := 0
	srv := simulate.Model{
		Latency:   simulate.Constant(time.Millisecond),
		ErrorRate: simulate.Constant(0.25),
		Served:    func(int64, bool) { served++ },
	}.Server()
	const n = 10_000
	fails := 0
	for range n {
		if _, fail := srv(0, rng); fail {
			fails++
		}
	}
	assert.Equal(t, n, served)
	assert.InDelta(t, 0.25, float64(fails)/n, 4*math.Sqrt(0.25*0.75/n))

	a, b := rand.New(rand.NewPCG(7, 8)), rand.New(rand.NewPCG(7, 8))
	never := simulate.Model{Latency: simulate.Constant(time.Millisecond), ErrorRate: simulate.Constant(0.0)}.Server()
	_, fail := never(0, a)
	assert.False(t, fail)
	assert.Equal(t, b.Uint64(), a.Uint64(), "a rate of 0 draws nothing")
}
