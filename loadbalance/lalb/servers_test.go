package lalb

import (
	"math/rand/v2"
	"time"
)

// The servers of the simulated providers (lbtest.Driver, driver_test.go).

// simServer decides how long a call started at now takes and whether it
// fails. slots > 0 models a server with that many workers and a FIFO queue
// (latency grows with load); slots == 0 means unlimited parallelism (a pure
// sleep, as in brpc's experiment).
type simServer struct {
	service func(now int64, rng *rand.Rand) (d int64, fail bool)
	slots   []int64 // time each worker becomes free
}

func (s *simServer) call(now int64, rng *rand.Rand) (end int64, fail bool) {
	d, fail := s.service(now, rng)
	if len(s.slots) == 0 {
		return now + d, fail
	}
	k := 0
	for i, t := range s.slots {
		if t < s.slots[k] {
			k = i
		}
	}
	start := max(now, s.slots[k])
	s.slots[k] = start + d
	return start + d, fail
}

// fixed returns a server whose calls all take d (no queueing).
func fixed(d time.Duration) *simServer {
	return &simServer{service: func(int64, *rand.Rand) (int64, bool) { return int64(d), false }}
}

// switching returns a server taking a before at and b from then on.
func switching(a, b time.Duration, at time.Duration) *simServer {
	return &simServer{service: func(now int64, _ *rand.Rand) (int64, bool) {
		if now < int64(at) {
			return int64(a), false
		}
		return int64(b), false
	}}
}

// queued returns a server with workers workers and exponential service
// times of mean d.
func queued(d time.Duration, workers int) *simServer {
	return &simServer{
		service: func(_ int64, rng *rand.Rand) (int64, bool) {
			return int64(rng.ExpFloat64() * float64(d)), false
		},
		slots: make([]int64, workers),
	}
}
