package simulate

import (
	"math/rand/v2"
	"time"
)

// Model is how a simulated provider serves its calls: the one server model
// of samples/lbsim and the balancers' tests. A call waits for the first
// worker that frees, in arrival order, then takes a service time drawn when
// its service starts; every function of time reads the virtual monotonic
// clock at that start. Server turns a Model into the Server of Sim.Add.
type Model struct {
	// Latency is the mean service time of a call whose service starts at
	// now; required. Constant and Steps make the usual ones.
	Latency func(now int64) time.Duration
	// Jitter, in [0, 1), spreads each service time uniformly over
	// Latency·(1 ± Jitter); 0 keeps Latency exactly.
	Jitter float64
	// Exp draws each service time from an exponential distribution of
	// mean Latency instead (Jitter is then not used).
	Exp bool
	// Workers is how many calls the provider serves at once; 0 means no
	// limit (a pure delay, as in brpc's experiments).
	Workers int
	// WorkersAt, when set, is how many of the Workers serve calls that
	// arrive at now (clamped to [1, Workers]): a capacity that changes.
	WorkersAt func(now int64) int
	// ErrorRate, when set, is the probability that a call whose service
	// starts at now fails, after its service time. A rate of 0 takes no
	// random draw.
	ErrorRate func(now int64) float64
	// Served, when set, runs as each call arrives, with when it will end
	// and whether it fails (samples/lbsim's load reports).
	Served func(end int64, fail bool)
}

// Constant returns the function of time that is v at every time.
func Constant[T any](v T) func(now int64) T {
	return func(int64) T { return v }
}

// Steps returns the function of time that is v[0] before at[0], v[k] from
// at[k-1] until at[k], and the last of v from the last of at on (at in
// virtual monotonic ns, increasing). v must have one more element than at.
func Steps[T any](v []T, at ...time.Duration) func(now int64) T {
	if len(v) != len(at)+1 {
		panic("simulate: Steps needs one more value than change times")
	}
	return func(now int64) T {
		for k, t := range at {
			if now < int64(t) {
				return v[k]
			}
		}
		return v[len(at)]
	}
}

// Server returns the Server of a provider served as m says. Each Server
// keeps its own queue: make one per provider.
func (m Model) Server() Server {
	var free []int64 // per worker, the virtual time it becomes free
	if m.Workers > 0 {
		free = make([]int64, m.Workers)
	}
	return func(now int64, rng *rand.Rand) (int64, bool) {
		start, slot := now, -1
		if len(free) > 0 {
			n := len(free)
			if m.WorkersAt != nil {
				n = min(max(m.WorkersAt(now), 1), n)
			}
			slot = 0
			for i, t := range free[:n] {
				if t < free[slot] {
					slot = i
				}
			}
			start = max(now, free[slot])
		}
		d := float64(m.Latency(start))
		if m.Exp {
			d *= rng.ExpFloat64()
		} else if m.Jitter > 0 {
			d *= 1 + m.Jitter*(2*rng.Float64()-1)
		}
		end := start + max(int64(d), 1)
		if slot >= 0 {
			free[slot] = end
		}
		fail := false
		if m.ErrorRate != nil {
			p := m.ErrorRate(start)
			fail = p > 0 && rng.Float64() < p
		}
		if m.Served != nil {
			m.Served(end, fail)
		}
		return end, fail
	}
}
