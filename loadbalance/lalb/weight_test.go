package lalb

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/dubbogo-lb/lb/loadbalance/internal/algo"
)

const ms = time.Millisecond

// steady is a full window: 128 successes over 128 ms (1000 calls/s).
func steady(lat time.Duration) callStats {
	return callStats{Samples: 128, Span: 127 * ms, SuccessLatency: lat}
}

func mustWeight(t *testing.T, s callStats, o Tuning) float64 {
	t.Helper()
	w, ok := providerWeight(s, o.withDefaults())
	if !ok {
		t.Fatalf("providerWeight(%+v): not enough samples", s)
	}
	return w
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b)) }

func TestWeightFormula(t *testing.T) {
	// 1000 calls/s at 1 ms with the default scale: 1e9.
	if w := mustWeight(t, steady(ms), Tuning{}); !near(w, 1e9) {
		t.Errorf("1000/s at 1 ms: %g, want 1e9", w)
	}
	// Same throughput, 3× the latency: a third (P = 1), a ninth (P = 2).
	w1 := mustWeight(t, steady(ms), Tuning{})
	w3 := mustWeight(t, steady(3*ms), Tuning{})
	if !near(w1/w3, 3) {
		t.Errorf("P=1: ratio %g, want 3", w1/w3)
	}
	w1 = mustWeight(t, steady(ms), Tuning{P: 2})
	w3 = mustWeight(t, steady(3*ms), Tuning{P: 2})
	if !near(w1/w3, 9) {
		t.Errorf("P=2: ratio %g, want 9", w1/w3)
	}
	// Twice the throughput at the same latency: twice the weight.
	fast := steady(ms)
	fast.Span /= 2
	if r := mustWeight(t, fast, Tuning{}) / mustWeight(t, steady(ms), Tuning{}); !near(r, 2) {
		t.Errorf("double QPS: ratio %g, want 2", r)
	}
	// A window too short to tell assumes 1 call/s, never less.
	slow := callStats{Samples: 20, Span: 100 * time.Second, SuccessLatency: ms}
	if w := mustWeight(t, slow, Tuning{}); !near(w, 1e6) {
		t.Errorf("0.19 calls/s: %g, want the 1/s minimum 1e6", w)
	}
	// A zero latency (coarse clock) stays finite.
	if w := mustWeight(t, steady(0), Tuning{}); !algo.Finite(w) || w <= 0 {
		t.Errorf("zero latency: %g", w)
	}
}

func TestWeightErrors(t *testing.T) {
	base := mustWeight(t, steady(10*ms), Tuning{})
	// 10% errors at 2 ms: each costs 1.2 × max(2, 10) = 12 ms, spread over
	// the successes; throughput counts successes only.
	s := steady(10 * ms)
	s.Errors, s.ErrorLatency = 13, 2*ms
	lat := 10 + 13*12.0/115
	want := base * (115.0 / 128) * 10 / lat
	if w := mustWeight(t, s, Tuning{}); !near(w, want) {
		t.Errorf("10%% errors: %g, want %g", w, want)
	}
	// A slow error costs 1.2 × its own latency.
	s.ErrorLatency = 50 * ms
	lat = 10 + 13*60.0/115
	want = base * (115.0 / 128) * 10 / lat
	if w := mustWeight(t, s, Tuning{}); !near(w, want) {
		t.Errorf("slow errors: %g, want %g", w, want)
	}
	// With a timeout, an error costs at least the timeout.
	s.Timeout = time.Second
	lat = 10 + 13*1000.0/115
	want = base * (115.0 / 128) * 10 / lat
	if w := mustWeight(t, s, Tuning{}); !near(w, want) {
		t.Errorf("errors with timeout: %g, want %g", w, want)
	}
	// Only errors: weight 0 (known, not new).
	w, ok := providerWeight(callStats{Samples: 128, Errors: 128, Span: time.Second, ErrorLatency: ms}, Tuning{}.withDefaults())
	if !ok || w != 0 {
		t.Errorf("all errors: %g, %v; want 0, true", w, ok)
	}
}

func TestInflightPenalty(t *testing.T) {
	s := steady(10 * ms)
	base := mustWeight(t, s, Tuning{})
	at := func(age time.Duration) float64 {
		s := s
		s.Delay = age
		return mustWeight(t, s, Tuning{})
	}
	// Calls in flight for up to 1.5 average latencies are normal.
	for _, age := range []time.Duration{0, 5 * ms, 10 * ms, 15 * ms} {
		if w := at(age); !near(w, base) {
			t.Errorf("mean age %v: %g, want unpunished %g", age, w, base)
		}
	}
	// Beyond that the weight falls as 15 ms / age.
	for _, age := range []time.Duration{30 * ms, 100 * ms, 10 * time.Second} {
		want := base * 15 / float64(age/ms)
		if w := at(age); !near(w, want) {
			t.Errorf("mean age %v: %g, want %g", age, w, want)
		}
	}
}

func TestNewProvider(t *testing.T) {
	o := Tuning{}.withDefaults()
	// Too few samples: new, unless most of them failed.
	for _, s := range []callStats{
		{},
		{Samples: 1, SuccessLatency: ms},
		{Samples: defaultMinSamples - 1, Span: ms, SuccessLatency: ms},
		{Samples: 4, Errors: 2, Span: ms, SuccessLatency: ms, ErrorLatency: ms},
	} {
		if _, ok := providerWeight(s, o); ok {
			t.Errorf("%+v: computed, want new", s)
		}
	}
	for _, s := range []callStats{
		{Samples: 1, Errors: 1, ErrorLatency: ms},
		{Samples: 4, Errors: 3, Span: ms, SuccessLatency: ms, ErrorLatency: ms},
		{Samples: defaultMinSamples, Span: ms, SuccessLatency: ms},
	} {
		if _, ok := providerWeight(s, o); !ok {
			t.Errorf("%+v: new, want computed", s)
		}
	}
	if _, ok := providerWeight(callStats{Samples: 1, SuccessLatency: ms}, Tuning{MinSamples: 1}.withDefaults()); !ok {
		t.Errorf("MinSamples 1: one success should be enough")
	}

	// A new provider starts at the average of the others...
	tr := newWeightTree([]int64{1000, 3000, 0})
	avg := newProviderWeight(tr.Total(), 2, o)
	if avg != 2000 {
		t.Fatalf("average %g, want 2000", avg)
	}
	tr.Set(2, treeWeight(avg, tr.Total(), 3, o))
	if tr.Weight(2) != 2000 {
		t.Errorf("new provider's tree weight %d, want 2000", tr.Weight(2))
	}
	// ...scaled by its warmup factor, but never below the probe floor.
	tr.Set(2, treeWeight(avg*0.5, tr.Total(), 3, o))
	if tr.Weight(2) != 1000 {
		t.Errorf("half-warm provider: %d, want 1000", tr.Weight(2))
	}
	tr.Set(2, treeWeight(avg*0, tr.Total(), 3, o))
	if got, want := tr.Weight(2), floorWeight(5000, 3, o); got != want || got <= 0 {
		t.Errorf("cold provider: %d, want the floor %d", got, want)
	}
	// With nobody to average, it gets Scale.
	if got := newProviderWeight(0, 0, o); got != defaultScale {
		t.Errorf("first provider: %g, want %g", got, defaultScale)
	}
}

func TestFloor(t *testing.T) {
	o := Tuning{}.withDefaults()
	if got := floorWeight(1_000_000, 3, o); got != 10_000 {
		t.Errorf("3 providers: floor %d, want 1%% = 10000", got)
	}
	// 200 providers: 1% each would be 200%; capped at half an equal share.
	if got := floorWeight(1_000_000, 200, o); got != 2500 {
		t.Errorf("200 providers: floor %d, want 0.5/200 = 2500", got)
	}
	if floorWeight(0, 3, o) != 1 || floorWeight(100, 0, o) != 1 || floorWeight(10, 3, o) != 1 {
		t.Errorf("degenerate floors must be 1")
	}
	// treeWeight: floor, rounding, cap.
	if got := treeWeight(0, 1_000_000, 3, o); got != 10_000 {
		t.Errorf("treeWeight(0): %d, want the floor", got)
	}
	if got := treeWeight(math.NaN(), 0, 0, o); got != 1 {
		t.Errorf("treeWeight(NaN): %d, want 1", got)
	}
	if got := treeWeight(123456.6, 1_000_000, 3, o); got != 123457 {
		t.Errorf("treeWeight rounds: %d", got)
	}
	if got := treeWeight(math.Inf(1), 0, 1, o); got != maxLeafWeight {
		t.Errorf("treeWeight(+Inf): %d, want maxLeafWeight", got)
	}
	if got := treeWeight(5, math.MaxInt64, 2, o); got != maxLeafWeight {
		t.Errorf("floor of a huge total: %d, want capped", got)
	}
}

func TestOptionsDefaults(t *testing.T) {
	want := Tuning{
		P: defaultP, Scale: defaultScale,
		PunishErrorRatio: defaultPunishErrorRatio, PunishInflightRatio: defaultPunishInflightRatio,
		MinShare: defaultMinShare, MinSamples: defaultMinSamples,
	}
	nan, inf := math.NaN(), math.Inf(1)
	for _, bad := range []Tuning{
		{},
		{P: nan, Scale: nan, PunishErrorRatio: nan, PunishInflightRatio: nan, MinShare: nan},
		{P: inf, Scale: inf, PunishErrorRatio: inf, PunishInflightRatio: inf, MinShare: inf},
		{P: -1, Scale: -1, PunishErrorRatio: -1, PunishInflightRatio: -1, MinShare: -1, MinSamples: -1},
		{P: 5, Scale: 0, PunishErrorRatio: 0.5, PunishInflightRatio: 0.9, MinShare: 0.6},
	} {
		if got := bad.withDefaults(); got != want {
			t.Errorf("%+v.withDefaults() = %+v, want %+v", bad, got, want)
		}
	}
	good := Tuning{P: 2, Scale: 10, PunishErrorRatio: 1, PunishInflightRatio: 3, MinShare: 0.5, MinSamples: 1}
	if got := good.withDefaults(); got != good {
		t.Errorf("valid options changed: %+v", got)
	}
}

// TestWeightAlwaysFinite throws random and extreme inputs at the weight
// functions: results stay finite, non-negative, and tree weights in range.
func TestWeightAlwaysFinite(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 2))
	pick := func(xs ...int64) int64 { return xs[rng.IntN(len(xs))] }
	for range 20_000 {
		s := callStats{
			Samples:        pick(-1, 0, 1, 2, 16, 128, math.MaxInt64),
			Errors:         pick(-5, 0, 1, 64, 128, math.MaxInt64),
			Span:           time.Duration(pick(-1, 0, 1, int64(time.Second), math.MaxInt64)),
			SuccessLatency: time.Duration(pick(-1, 0, 1, int64(ms), math.MaxInt64)),
			ErrorLatency:   time.Duration(pick(-1, 0, 1, int64(ms), math.MaxInt64)),
			Timeout:        time.Duration(pick(-1, 0, int64(time.Second), math.MaxInt64)),
			Delay:          time.Duration(pick(-1, 0, 1, int64(ms), rng.Int64(), math.MaxInt64)),
		}
		o := Tuning{P: float64(rng.IntN(6)) * 0.5, MinShare: rng.Float64()}.withDefaults()
		w, _ := providerWeight(s, o)
		if !algo.Finite(w) || w < 0 {
			t.Fatalf("providerWeight(%+v) = %g", s, w)
		}
		tw := treeWeight(w, pick(0, 1, rng.Int64(), math.MaxInt64), int(pick(0, 1, 3, 1000)), o)
		if tw < 1 || tw > maxLeafWeight {
			t.Fatalf("treeWeight(%g) = %d", w, tw)
		}
	}
}

func TestWeightNoAllocs(t *testing.T) {
	s := steady(ms)
	s.Errors, s.ErrorLatency, s.Delay = 3, ms, time.Second
	o := Tuning{P: 1.5}.withDefaults()
	if a := testing.AllocsPerRun(1000, func() {
		w, _ := providerWeight(s, o)
		_ = treeWeight(w, 1e12, 10, o)
	}); a != 0 {
		t.Errorf("%v allocs", a)
	}
}
