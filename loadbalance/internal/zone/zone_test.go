package zone

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// full is a zone of n providers of weight 100, h of them healthy.
func full(name string, n, h int) Zone {
	return Zone{Name: name, Providers: n, Weight: 100 * float64(n), Healthy: 100 * float64(h)}
}

func TestZoneBalancedStaysLocal(t *testing.T) {
	p := Compute([]Zone{full("a", 6, 6), full("b", 6, 6)}, 0, false, Options{})
	assert.Equal(t, Direct, p.Mode)
	assert.Equal(t, 1.0, p.LocalShare)
	r := rand.New(rand.NewPCG(1, 2))
	for range 1000 {
		require.Equal(t, 0, p.Choose(r.Uint64()))
	}
}

// Envoy's overprovisioning: a zone that lost one provider of six still
// counts at full weight (5 × 1.4 > 6); one that lost half counts at 1.4 ×
// its healthy weight and spills the rest.
func TestZoneSpillWhenLocalShrinks(t *testing.T) {
	p := Compute([]Zone{full("a", 6, 5), full("b", 6, 6)}, 0, false, Options{})
	assert.Equal(t, Direct, p.Mode, "one provider down is covered by overprovisioning")

	p = Compute([]Zone{full("a", 6, 3), full("b", 6, 6)}, 0, false, Options{})
	require.Equal(t, Spill, p.Mode)
	// capacity a = min(600, 1.4 × 300) = 420, b = 600; a's callers: half.
	want := (420.0 / 1020) / 0.5
	assert.InDelta(t, want, p.LocalShare, 1e-12)
	assert.InDelta(t, 1-want, share(&p, 1), 1e-12)

	// The caller in the healthy zone keeps all its calls.
	q := Compute([]Zone{full("a", 6, 3), full("b", 6, 6)}, 1, false, Options{})
	assert.Equal(t, Direct, q.Mode)

	// A whole zone down: everything spills.
	p = Compute([]Zone{full("a", 6, 0), full("b", 6, 6)}, 0, false, Options{})
	require.Equal(t, Spill, p.Mode)
	assert.Equal(t, 0.0, p.LocalShare)
	assert.Equal(t, 1.0, share(&p, 1))
}

// Three zones of uneven size; the spill goes to the zones with spare
// capacity, in proportion to it.
func TestZoneSpillByResidualCapacity(t *testing.T) {
	zones := []Zone{full("a", 8, 4), full("b", 6, 6), full("c", 4, 4)}
	p := Compute(zones, 0, false, Options{})
	require.Equal(t, Spill, p.Mode)
	// capacities 560, 600, 400 of 1560; callers 800, 600, 400 of 1800.
	capA, capB, capC := 560.0/1560, 600.0/1560, 400.0/1560
	callA, callB, callC := 800.0/1800, 600.0/1800, 400.0/1800
	assert.InDelta(t, capA/callA, p.LocalShare, 1e-12)
	spareB, spareC := capB-callB, capC-callC
	require.Positive(t, spareB)
	require.Positive(t, spareC)
	assert.InDelta(t, (1-p.LocalShare)*spareB/(spareB+spareC), share(&p, 1), 1e-12)
	assert.InDelta(t, (1-p.LocalShare)*spareC/(spareB+spareC), share(&p, 2), 1e-12)
	assert.InDelta(t, 1, share(&p, 0)+share(&p, 1)+share(&p, 2), 1e-12)
	checkShares(t, p, 3, p.Choose)
}

// Callers as configured: a zone that sends 80 % of the calls and holds half
// the providers keeps 0.5/0.8 of its calls.
func TestZoneCallersKnown(t *testing.T) {
	a, b := full("a", 6, 6), full("b", 6, 6)
	a.Callers, b.Callers = 80, 20
	p := Compute([]Zone{a, b}, 0, false, Options{})
	require.Equal(t, Spill, p.Mode)
	assert.InDelta(t, 0.625, p.LocalShare, 1e-12)
	q := Compute([]Zone{a, b}, 1, false, Options{})
	assert.Equal(t, Direct, q.Mode)
}

func TestZoneOff(t *testing.T) {
	two := []Zone{full("a", 6, 6), full("b", 6, 6)}
	for name, p := range map[string]Plan{
		"below the minimum size": Compute([]Zone{full("a", 3, 3), full("b", 2, 2)}, 0, false, Options{}),
		"panic mode":             Compute(two, 0, true, Options{}),
		"caller's zone unknown":  Compute(two, -1, false, Options{}),
		"index out of range":     Compute(two, 2, false, Options{}),
		"one zone":               Compute(two[:1], 0, false, Options{MinClusterSize: -1}),
		"local zone empty":       Compute([]Zone{{Name: "a"}, full("b", 6, 6)}, 0, false, Options{}),
		"no callers in the zone": Compute([]Zone{{Name: "a", Providers: 2, Weight: 200, Healthy: 200}, {Name: "b", Providers: 6, Weight: 600, Healthy: 600, Callers: 1}}, 0, false, Options{}),
		"nothing healthy":        Compute([]Zone{full("a", 6, 0), full("b", 6, 0)}, 0, false, Options{}),
	} {
		assert.Equal(t, Off, p.Mode, name)
		assert.Equal(t, -1, p.Choose(1), name)
		assert.True(t, math.IsNaN(share(&p, 0)), name)
	}
	small := Compute([]Zone{full("a", 3, 3), full("b", 2, 2)}, 0, false, Options{MinClusterSize: -1})
	assert.NotEqual(t, Off, small.Mode, "a negative minimum: always zone-aware")
}

// Bad numbers never panic and never route to a zone without capacity.
func TestZoneBadInput(t *testing.T) {
	nan := math.NaN()
	zones := []Zone{
		{Name: "a", Providers: 6, Weight: 600, Healthy: 200},
		{Name: "b", Providers: 3, Weight: nan, Healthy: nan},
		{Name: "c", Providers: 3, Weight: -5, Healthy: math.Inf(1)},
		{Name: "d", Providers: 3, Weight: 300, Healthy: 300},
	}
	p := Compute(zones, 0, false, Options{Overprovisioning: nan})
	require.Equal(t, Spill, p.Mode)
	r := rand.New(rand.NewPCG(3, 4))
	for range 10000 {
		z := p.Choose(r.Uint64())
		assert.Contains(t, []int{0, 3}, z)
	}
}

// checkShares draws n calls through choose and compares each zone's share
// with the plan's, within 4.5 binomial standard deviations.
func checkShares(t *testing.T, p Plan, zones int, choose func(u uint64) int) {
	t.Helper()
	assert.NoError(t, sharesWithin(p, zones, choose))
}

func sharesWithin(p Plan, zones int, choose func(u uint64) int) error {
	const n = 200000
	r := rand.New(rand.NewPCG(5, 6))
	counts := make([]int, zones)
	for range n {
		counts[choose(r.Uint64())]++
	}
	for i, c := range counts {
		want := share(&p, i)
		sd := math.Sqrt(want * (1 - want) / n)
		if got := float64(c) / n; math.Abs(got-want) > 4.5*sd+1e-9 {
			return &shareError{zone: i, got: got, want: want}
		}
	}
	return nil
}

type shareError struct {
	zone      int
	got, want float64
}

func (e *shareError) Error() string {
	return "zone " + string(rune('0'+e.zone)) + ": share off"
}

// Negative control: the same check fails for a choice that ignores the
// plan's spill (always local) and for one that spills uniformly.
func TestZoneSpillSharesNegativeControl(t *testing.T) {
	p := Compute([]Zone{full("a", 8, 4), full("b", 6, 6), full("c", 4, 4)}, 0, false, Options{})
	require.Equal(t, Spill, p.Mode)
	assert.Error(t, sharesWithin(p, 3, func(u uint64) int { return 0 }))
	assert.Error(t, sharesWithin(p, 3, func(u uint64) int {
		if u < uint64(p.LocalShare*0x1p64) {
			return 0
		}
		return 1 + int(u&1) // spill evenly, not by spare capacity
	}))
}

func TestZoneChooseAllocatesNothing(t *testing.T) {
	p := Compute([]Zone{full("a", 8, 4), full("b", 6, 6), full("c", 4, 4)}, 0, false, Options{})
	var u uint64 = 1
	assert.Zero(t, testing.AllocsPerRun(100, func() { u = u*6364136223846793005 + 1; p.Choose(u) }))
}

func FuzzCompute(f *testing.F) {
	f.Add(6, 3.0, 600.0, 6, 6.0, 600.0, 4, 4.0, 400.0, 0.0, 0.0, 1.4, 0, 0, uint64(1))
	f.Fuzz(func(t *testing.T, na int, ha, wa float64, nb int, hb, wb float64, nc int, hc, wc float64, ca, cb float64, over float64, min, local int, u uint64) {
		zones := []Zone{
			{Name: "a", Providers: na, Weight: wa, Healthy: ha, Callers: ca},
			{Name: "b", Providers: nb, Weight: wb, Healthy: hb, Callers: cb},
			{Name: "c", Providers: nc, Weight: wc, Healthy: hc},
		}
		p := Compute(zones, local, false, Options{MinClusterSize: min, Overprovisioning: over})
		z := p.Choose(u)
		if p.Mode == Off {
			if z != -1 {
				t.Fatalf("off plan chose %d", z)
			}
			return
		}
		if z < 0 || z >= len(zones) {
			t.Fatalf("zone %d out of range", z)
		}
		if !(p.LocalShare >= 0 && p.LocalShare <= 1) {
			t.Fatalf("local share %v", p.LocalShare)
		}
		sum := 0.0
		for i := range zones {
			sum += share(&p, i)
		}
		if math.Abs(sum-1) > 1e-9 {
			t.Fatalf("shares sum to %v: %+v", sum, p)
		}
	})
}

// A zone's callers follow its provisioned weight: the same shrink spills
// with the weight remembered, and stays home without it.
func TestZoneCallersFollowTheProvisionedWeight(t *testing.T) {
	shrunk := []Zone{
		{Name: "a", Providers: 3, Weight: 300, Healthy: 300, Provisioned: 600},
		{Name: "b", Providers: 4, Weight: 400, Healthy: 400},
		{Name: "c", Providers: 2, Weight: 200, Healthy: 200},
	}
	p := Compute(shrunk, 0, false, Options{})
	if p.Mode != Spill || math.Abs(p.LocalShare-2.0/3) > 1e-12 {
		t.Errorf("remembered: %v %.4f, want spill keeping 2/3", p.Mode, p.LocalShare)
	}
	shrunk[0].Provisioned = 0
	if p := Compute(shrunk, 0, false, Options{}); p.Mode != Direct {
		t.Errorf("not remembered: %v, want direct", p.Mode)
	}
}

// Remember keeps the larger weight, and its excess halves every half-life.
func TestRememberDecaysTheExcess(t *testing.T) {
	const h = 10 * time.Minute
	m := Remember(Memory{}, 600, 0, h)
	if m.Weight != 600 {
		t.Fatalf("first: %v", m)
	}
	m = Remember(m, 300, int64(h), h)
	if math.Abs(m.Weight-450) > 1e-9 {
		t.Errorf("one half-life after losing half: %v, want 450", m.Weight)
	}
	if m = Remember(m, 800, int64(2*h), h); m.Weight != 800 {
		t.Errorf("grown: %v, want 800", m.Weight)
	}
	if m = Remember(Memory{Weight: 600}, 300, 0, 0); m.Weight != 300 {
		t.Errorf("no memory: %v, want 300", m.Weight)
	}
	if m = Remember(Memory{Weight: math.NaN()}, math.Inf(1), 0, h); m.Weight != 0 {
		t.Errorf("bad weights: %v, want 0", m.Weight)
	}
}

// Share returns the expected share of the local zone's calls that zone i
// serves; NaN when the plan is Off.
func share(p *Plan, i int) float64 {
	switch {
	case p.Mode == Off:
		return math.NaN()
	case i == p.Local:
		return p.LocalShare
	}
	total := p.residual[len(p.residual)-1]
	if total <= 0 {
		return 0
	}
	prev := 0.0
	if i > 0 {
		prev = p.residual[i-1]
	}
	return (1 - p.LocalShare) * (p.residual[i] - prev) / total
}
