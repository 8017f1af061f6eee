package lalb

import (
	"math"
	"testing"
	"time"

	"dubbo.apache.org/dubbo-go/v3/protocol/base"
	"github.com/stretchr/testify/assert"

	"github.com/dubbogo-lb/lb/loadbalance/internal/lbtest"
)

// Scripted scenarios on the simulator engine (lbtest.Driver over package
// simulate): the real Balancer through the real lbactive filter, virtual
// time, fixed seeds, no sleeps. The driver's clock starts at 1 s.

const sec = time.Second

func TestScenarioMovesToFaster(t *testing.T) {
	d := newDriver(t, Options{}, 1, 100*ms, fixed(3*ms), fixed(1*ms))
	d.Run(10, 4*sec)
	if got := d.Share(1, 2*sec, 4*sec); got < 0.95 {
		t.Errorf("1 ms provider: %.3f of traffic, want >= 0.95", got)
	}
	// The slow one keeps its probe share.
	if got := d.Share(0, 2*sec, 4*sec); got < 0.005 {
		t.Errorf("3 ms provider: %.4f of traffic, want a probe share", got)
	}
}

// TestScenarioBrpcExperiment reproduces brpc's lalb.md experiment: servers
// sleeping 1, 2 and 3 ms, 50 callers; 2 s later the latencies are reversed.
func TestScenarioBrpcExperiment(t *testing.T) {
	d := newDriver(t, Options{}, 2, 100*ms,
		switching(1*ms, 3*ms, 3*sec),
		switching(2*ms, 2*ms, 3*sec),
		switching(3*ms, 1*ms, 3*sec))
	d.Run(50, 5*sec)
	if got := d.Share(0, 2*sec, 3*sec); got < 0.95 {
		t.Errorf("before: 1 ms server has %.3f of traffic, want >= 0.95", got)
	}
	if got := d.Share(2, 4*sec, 5*sec); got < 0.95 {
		t.Errorf("after reversal: new 1 ms server has %.3f of traffic, want >= 0.95", got)
	}
	before, _ := d.Throughput(2*sec, 3*sec)
	after, _ := d.Throughput(3*sec, 4*sec)
	if after < 0.85*before {
		t.Errorf("throughput in the second after reversal %.0f/s, before %.0f/s", after, before)
	}
	t.Logf("throughput before %.0f/s, first second after reversal %.0f/s", before, after)
}

// TestScenarioHangingProvider: one of two providers stops answering (its
// calls fail at a 500 ms timeout) 1 s into a run of 10 000 independent
// calls/s. The in-flight penalty must take its traffic away long before the
// first timeout comes back.
func TestScenarioHangingProvider(t *testing.T) {
	run := func(o Tuning) (hung int64) {
		d := newDriver(t, Options{Tuning: o}, 3, 10*ms, fixed(ms), hanging(2*sec, 500*ms))
		defer d.Stop() // its hung calls are goroutines
		d.RunOpen(10_000, 2200*ms)
		return d.Picked(1, 2*sec, 2200*ms)
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
// small probe share (MinShare), and gets its traffic back when it recovers;
// with its errors charged its 100 ms timeout or not.
func TestScenarioFailingProviderProbe(t *testing.T) {
	for _, timeout := range []time.Duration{0, 100 * ms} {
		d := newDriver(t, Options{ChargeTimeout: timeout > 0}, 4, 100*ms, queued(ms, 4), queued(ms, 4))
		d.List = append(d.List, d.Add(lbtest.Provider(20002, map[string]string{"weight": "100", "timeout": timeout.String()}), failingUntil(4*sec)))
		lbtest.EjectionOff(d.List...) // LALB's own response to errors
		d.Run(20, 7*sec)
		got := d.Share(2, 2*sec, 4*sec)
		assert.True(t, got >= 0.005 && got <= 0.02, "timeout %v: failing provider has %.4f of traffic, want about %.2f", timeout, got, defaultMinShare)
		// Recovered at 4 s: it is the least loaded, so the fastest, and
		// wins back a fair part of the traffic. (With servers whose latency
		// does not grow with load LALB is neutral: any split of the traffic
		// between equally fast providers is stable.)
		back := d.Share(2, 6*sec, 7*sec)
		assert.GreaterOrEqual(t, back, 0.15, "timeout %v: recovered provider's share 2 s later", timeout)
		t.Logf("timeout %v: share while failing %.4f, 2 s after recovery %.3f", timeout, got, back)
	}
}

// TestScenarioNewProvider: a provider joining a running cluster starts at
// the average weight (times its warmup factor) instead of collapsing after
// its first completion as in brpc.
func TestScenarioNewProvider(t *testing.T) {
	for _, warm := range []float64{1, 0.5} {
		d := newDriver(t, Options{}, 5, 100*ms, queued(ms, 4), queued(ms, 4))
		d.Run(10, 3*sec)
		// Warm, or half way through a 10 s warmup.
		var joined base.Invoker
		if warm < 1 {
			joined = d.startedAt(3*sec-time.Duration(warm*float64(10*sec)), 10*sec, queued(ms, 4))
		} else {
			joined = d.Add(lbtest.Provider(20002, map[string]string{"weight": "100"}), queued(ms, 4))
		}
		d.List = append(d.List, joined)
		w := d.weights()
		avg := float64(w[0]+w[1]) / 2
		assert.InDelta(t, warm*avg, float64(w[2]), 0.01*avg, "warm %v: the newcomer's weight at joining", warm)
		d.Run(10, 4*sec)
		first := d.Share(2, 3*sec, 3100*ms)
		assert.InDelta(t, warm/(2+warm), first, 0.1, "warm %v: share in the first 100 ms", warm)
		// After that, latency decides: equal servers end near a third each.
		later := d.Share(2, 3500*ms, 4*sec)
		assert.GreaterOrEqual(t, later, 0.2, "warm %v: share after 500 ms, want a fair part", warm)
		t.Logf("warm %v: share in the first 100 ms %.3f, 0.5-1 s later %.3f", warm, first, later)
	}
}

// TestCompareP measures the latency exponent on three scripted scenarios;
// the numbers back the choice of defaultP. Run with -v to see them.
func TestCompareP(t *testing.T) {
	if testing.Short() {
		t.Skip("simulation")
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
		o := Options{Tuning: Tuning{P: p}}
		d := newDriver(t, o, 1, 10*ms,
			switching(1*ms, 3*ms, 3*sec), switching(2*ms, 2*ms, 3*sec), switching(3*ms, 1*ms, 3*sec))
		d.Run(50, 4*sec)
		r.converge = -1
		for b := 3 * sec; b < 4*sec; b += 10 * ms {
			if d.Share(2, b, b+10*ms) >= 0.9 {
				r.converge = b - 3*sec
				break
			}
		}
		r.reversalFirstQPS, _ = d.Throughput(3*sec, 3500*ms)

		d = newDriver(t, o, 1, 100*ms, queued(1*ms, 8), queued(2*ms, 8), queued(4*ms, 8))
		d.Run(50, 9*sec)
		r.qps, r.lat = d.Throughput(3*sec, 9*sec)
		r.std = shareStd(d, 0, 3*sec, 9*sec, 100*ms)

		d = newDriver(t, o, 1, 100*ms, queued(ms, 8), queued(ms, 8), queued(ms, 8))
		d.Run(20, 9*sec)
		r.equalStd = shareStd(d, 0, 3*sec, 9*sec, 100*ms)
		res[p] = r
		t.Logf("P=%v: reversal: 90%% after %v, %.0f/s in the first 500 ms; queued 1/2/4 ms: %.0f/s, mean %v, share std %.3f; equal servers: share std %.3f",
			p, r.converge, r.reversalFirstQPS, r.qps, r.lat.Round(time.Microsecond), r.std, r.equalStd)
		if r.converge < 0 || r.converge > 500*ms {
			t.Errorf("P=%v: traffic did not move to the new fastest within 500 ms", p)
		}
	}
}

// shareStd returns the standard deviation of provider i's share of the
// picks per bucket in [from, to).
func shareStd(d *driver, i int, from, to, bucket time.Duration) float64 {
	var xs []float64
	for b := from; b < to; b += bucket {
		xs = append(xs, d.Share(i, b, b+bucket))
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
