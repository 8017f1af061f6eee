package lalb

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// Scripted scenarios on the simulator of sim_test.go: virtual time, fixed
// seeds, no sleeps.

const sec = time.Second

func TestScenarioMovesToFaster(t *testing.T) {
	s := newSim(Tuning{}, 1, 100*ms, fixed(3*ms), fixed(1*ms))
	s.run(10, 3*sec)
	if got := s.share(1, 1*sec, 3*sec); got < 0.95 {
		t.Errorf("1 ms provider: %.3f of traffic, want >= 0.95", got)
	}
	// The slow one keeps its probe share.
	if got := s.share(0, 1*sec, 3*sec); got < 0.005 {
		t.Errorf("3 ms provider: %.4f of traffic, want a probe share", got)
	}
}

// TestScenarioBrpcExperiment reproduces brpc's lalb.md experiment: servers
// sleeping 1, 2 and 3 ms, 50 callers; then the latencies are reversed.
func TestScenarioBrpcExperiment(t *testing.T) {
	s := newSim(Tuning{}, 2, 100*ms,
		switching(1*ms, 3*ms, 2*sec),
		switching(2*ms, 2*ms, 2*sec),
		switching(3*ms, 1*ms, 2*sec))
	s.run(50, 4*sec)
	if got := s.share(0, 1*sec, 2*sec); got < 0.95 {
		t.Errorf("before: 1 ms server has %.3f of traffic, want >= 0.95", got)
	}
	if got := s.share(2, 3*sec, 4*sec); got < 0.95 {
		t.Errorf("after reversal: new 1 ms server has %.3f of traffic, want >= 0.95", got)
	}
	before, _ := s.throughput(1*sec, 2*sec)
	after, _ := s.throughput(2*sec, 3*sec)
	if after < 0.85*before {
		t.Errorf("throughput in the second after reversal %.0f/s, before %.0f/s", after, before)
	}
	t.Logf("throughput before %.0f/s, first second after reversal %.0f/s", before, after)
}

// TestScenarioHangingProvider: one of two providers stops answering (its
// calls fail at a 500 ms timeout) under 10 000 independent calls/s. The
// in-flight penalty must take its traffic away long before the first
// timeout comes back.
func TestScenarioHangingProvider(t *testing.T) {
	hang := func() *simServer {
		return &simServer{service: func(now int64, _ *rand.Rand) (int64, bool) {
			if now < int64(sec) {
				return int64(ms), false
			}
			return int64(500 * ms), true
		}}
	}
	run := func(o Tuning) (hung int64) {
		s := newSim(o, 3, 10*ms, fixed(ms), hang())
		s.runOpen(10_000, 1700*ms)
		// Calls started on the hung provider in [1 s, 1.2 s) fail in
		// [1.5 s, 1.7 s).
		for b := 150; b < 170; b++ {
			hung += s.errCount[b]
		}
		return hung
	}
	on := run(Tuning{})
	off := run(Tuning{PunishInflightRatio: 1e12}) // penalty off
	t.Logf("calls sent to the hung provider in its first 200 ms: %d with the in-flight penalty, %d without", on, off)
	if on*4 > off {
		t.Errorf("in-flight penalty: %d calls hung, without it %d; want at most a quarter", on, off)
	}
	// The floor keeps probing it: 1% of 2000 calls.
	if on < 15 {
		t.Errorf("hung provider got %d calls in 200 ms, want at least its probe share", on)
	}
}

// TestScenarioFailingProviderProbe: a provider whose calls all fail keeps a
// small probe share (MinShare), and gets its traffic back when it recovers.
func TestScenarioFailingProviderProbe(t *testing.T) {
	for _, timeout := range []time.Duration{0, 100 * ms} {
		failing := &simServer{service: func(now int64, _ *rand.Rand) (int64, bool) {
			return int64(ms), now < int64(3*sec)
		}}
		failing.slots = make([]int64, 4)
		s := newSim(Tuning{}, 4, 100*ms, queued(ms, 4), queued(ms, 4), failing)
		s.stats[2].timeout = timeout
		s.run(20, 6*sec)
		got := s.share(2, 1*sec, 3*sec)
		if got < 0.005 || got > 0.02 {
			t.Errorf("timeout %v: failing provider has %.4f of traffic, want about %.2f", timeout, got, DefaultMinShare)
		}
		// Recovered at 3 s: it is the least loaded, so the fastest, and
		// wins back a fair part of the traffic. (With servers whose latency
		// does not grow with load LALB is neutral: any split of the traffic
		// between equally fast providers is stable.)
		back := s.share(2, 5*sec, 6*sec)
		if back < 0.15 {
			t.Errorf("timeout %v: recovered provider has %.3f of traffic 2 s later", timeout, back)
		}
		t.Logf("timeout %v: share while failing %.4f, 2 s after recovery %.3f", timeout, got, back)
	}
}

// TestScenarioNewProvider: a provider joining a running cluster starts at
// the average weight (times its warmup factor) instead of collapsing after
// its first completion as in brpc.
func TestScenarioNewProvider(t *testing.T) {
	for _, warm := range []float64{1, 0.5} {
		s := newSim(Tuning{}, 5, 100*ms, queued(ms, 4), queued(ms, 4))
		s.run(10, 2*sec)
		s.join(queued(ms, 4), warm)
		avg := float64(s.tree.Weight(0)+s.tree.Weight(1)) / 2
		if got := float64(s.tree.Weight(2)); math.Abs(got-warm*avg) > 0.01*avg {
			t.Errorf("warm %v: joined at %g, want %g", warm, got, warm*avg)
		}
		s.run(10, 3*sec)
		first := s.share(2, 2*sec, 2100*ms)
		want := warm / (2 + warm)
		if math.Abs(first-want) > 0.1 {
			t.Errorf("warm %v: first 100 ms share %.3f, want about %.3f", warm, first, want)
		}
		// After that, latency decides: equal servers end near a third each.
		later := s.share(2, 2500*ms, 3*sec)
		if later < 0.2 {
			t.Errorf("warm %v: share %.3f after 500 ms, want a fair part", warm, later)
		}
		t.Logf("warm %v: share in the first 100 ms %.3f, 0.5-1 s later %.3f", warm, first, later)
	}
}

// TestCompareP measures the latency exponent on three scripted scenarios;
// the numbers back the choice of DefaultP. Run with -v to see them.
func TestCompareP(t *testing.T) {
	if testing.Short() {
		t.Skip("simulation")
	}
	if raceEnabled {
		t.Skip("a measurement on one goroutine: run without -race (it/test.sh does)")
	}
	type result struct {
		converge         time.Duration // reversal: until the new fastest has 90% of a 10 ms bucket
		qps              float64       // queued servers: throughput
		lat              time.Duration // queued servers: mean latency
		std              float64       // queued servers: std-dev of the fastest's share per 100 ms
		equalStd         float64       // three equal servers: std-dev of a share per 100 ms
		reversalFirstQPS float64
	}
	res := map[float64]result{}
	for _, p := range []float64{1, 2} {
		var r result
		o := Tuning{P: p}
		s := newSim(o, 1, 10*ms,
			switching(1*ms, 3*ms, 2*sec), switching(2*ms, 2*ms, 2*sec), switching(3*ms, 1*ms, 2*sec))
		s.run(50, 3*sec)
		r.converge = -1
		for b := 2 * sec; b < 3*sec; b += 10 * ms {
			if s.share(2, b, b+10*ms) >= 0.9 {
				r.converge = b - 2*sec
				break
			}
		}
		r.reversalFirstQPS, _ = s.throughput(2*sec, 2500*ms)

		s = newSim(o, 1, 100*ms, queued(1*ms, 8), queued(2*ms, 8), queued(4*ms, 8))
		s.run(50, 8*sec)
		r.qps, r.lat = s.throughput(2*sec, 8*sec)
		r.std = shareStd(s, 0, 2*sec, 8*sec)

		s = newSim(o, 1, 100*ms, queued(ms, 8), queued(ms, 8), queued(ms, 8))
		s.run(20, 8*sec)
		r.equalStd = shareStd(s, 0, 2*sec, 8*sec)
		res[p] = r
		t.Logf("P=%v: reversal: 90%% after %v, %.0f/s in the first 500 ms; queued 1/2/4 ms: %.0f/s, mean %v, share std %.3f; equal servers: share std %.3f",
			p, r.converge, r.reversalFirstQPS, r.qps, r.lat.Round(time.Microsecond), r.std, r.equalStd)
		if r.converge < 0 || r.converge > 500*ms {
			t.Errorf("P=%v: traffic did not move to the new fastest within 500 ms", p)
		}
	}
}

func shareStd(s *sim, i int, from, to time.Duration) float64 {
	var xs []float64
	for b := from; b < to; b += time.Duration(s.bucket) {
		xs = append(xs, s.share(i, b, b+time.Duration(s.bucket)))
	}
	var m, v float64
	for _, x := range xs {
		m += x
	}
	m /= float64(len(xs))
	for _, x := range xs {
		v += (x - m) * (x - m)
	}
	return math.Sqrt(v / float64(len(xs)))
}
