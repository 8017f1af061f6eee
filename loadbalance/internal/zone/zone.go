// Package zone is zone-aware routing for every balancer of the module:
// Envoy's algorithm, which keeps a call in the caller's zone while that
// zone's providers can carry the caller zone's share of the load, and
// spills the excess to the other zones in proportion to their spare
// capacity. It knows nothing of dubbo-go: a Plan is computed from the
// zones' weights when a snapshot is built, and Choose turns one random
// word into a zone on the call path, without allocating.
//
// Reasoning, Envoy's rules and each departure from them: DESIGN.md beside
// this file.
package zone

import (
	"math"
	"math/bits"
	"time"
)

// Defaults of Options, as Envoy's.
const (
	// DefaultMinClusterSize is the smallest number of providers for which
	// zones are taken into account (Envoy's min_cluster_size).
	DefaultMinClusterSize = 6
	// DefaultOverprovisioning is the factor by which a zone's healthy
	// weight is taken to cover for its unhealthy providers (Envoy's
	// overprovisioning_factor, 140 %).
	DefaultOverprovisioning = 1.4
)

// Options tune a Plan. The zero value gives Envoy's defaults.
type Options struct {
	// MinClusterSize: with fewer providers than this, zones are ignored.
	// Default DefaultMinClusterSize; negative: always zone-aware.
	MinClusterSize int
	// Overprovisioning (>= 1): a zone whose healthy weight is at least
	// 1/Overprovisioning of its full weight counts at its full weight; a
	// zone with less counts at Overprovisioning × its healthy weight.
	// Default DefaultOverprovisioning.
	Overprovisioning float64
}

func (o Options) withDefaults() Options {
	if o.MinClusterSize == 0 {
		o.MinClusterSize = DefaultMinClusterSize
	}
	if !(o.Overprovisioning >= 1) || math.IsInf(o.Overprovisioning, 0) {
		o.Overprovisioning = DefaultOverprovisioning
	}
	return o
}

// Zone is what a Plan needs to know of one zone's providers.
type Zone struct {
	// Name of the zone ("" for providers that state none).
	Name string
	// Providers is the number of providers of the zone.
	Providers int
	// Weight is the zone's full weight: the sum of its providers' weights
	// as if all were healthy.
	Weight float64
	// Healthy is the weight of its providers that serve now: not
	// ejected, not drained, not in a long run of failures.
	Healthy float64
	// Callers is the share of the calls that come from this zone, in any
	// unit (only ratios matter); 0 for every zone when it is not known,
	// in which case each zone is assumed to send calls in proportion to
	// its provisioned weight (a fleet sized per zone).
	Callers float64
	// Provisioned is the weight the zone was provisioned with, which its
	// callers keep when its providers leave (see Remember); the full
	// Weight where it is smaller. A zone whose providers have all left
	// has Providers 0 and a Provisioned weight: its callers count, it
	// serves nothing.
	Provisioned float64
}

// Mode is how a Plan routes.
type Mode uint8

const (
	// Off: zones are ignored (no local zone, too few providers, the
	// caller's zone has no provider, or ejection is in panic mode).
	Off Mode = iota
	// Direct: every call stays in the local zone (Envoy's LocalityDirect).
	Direct
	// Spill: a share of the calls stays local, the rest spills to the
	// other zones in proportion to their spare capacity (Envoy's
	// LocalityResidual).
	Spill
)

func (m Mode) String() string {
	switch m {
	case Direct:
		return "direct"
	case Spill:
		return "spill"
	}
	return "off"
}

// Plan is the routing of one snapshot: which zone serves a call.
type Plan struct {
	Mode Mode
	// Local is the index of the caller's zone in the zones the Plan was
	// computed from; -1 when Mode is Off.
	Local int
	// LocalShare is the share of the calls that stay in the local zone, in
	// [0, 1]: 1 when Mode is Direct.
	LocalShare float64
	// local is LocalShare as a threshold on a 64-bit random word.
	local uint64
	// residual holds the cumulative spare capacity of the zones, in zone
	// order (the local zone adds nothing): a spilled call goes to the
	// first zone whose cumulative capacity exceeds its draw.
	residual []float64
}

// Share returns the expected share of the calls of the local zone's
// callers that zone i serves under the plan (what the simulator and the
// tests compare the measured shares with).
func (p *Plan) Share(i int) float64 {
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

// Compute returns the plan for zones, the caller being in zones[local]
// (local < 0: the caller's zone is unknown or has no provider), with
// panic true when outlier ejection is in panic mode (then, as in Envoy,
// zones are ignored).
func Compute(zones []Zone, local int, panic bool, opts Options) Plan {
	off := Plan{Mode: Off, Local: -1}
	opts = opts.withDefaults()
	if local < 0 || local >= len(zones) || panic || len(zones) < 2 {
		return off
	}
	providers := 0
	for _, z := range zones {
		providers += z.Providers
	}
	if providers < opts.MinClusterSize || zones[local].Providers <= 0 || clean(zones[local].Weight) == 0 {
		return off
	}
	// Each zone's capacity: its healthy weight, overprovisioned, at most
	// its full weight (Envoy's locality availability). Each zone's
	// callers: as configured, else in proportion to the provisioned
	// weights.
	callersKnown := false
	for _, z := range zones {
		if z.Callers > 0 {
			callersKnown = true
		}
	}
	var capTotal, callTotal float64
	for _, z := range zones {
		capTotal += capacity(z, opts)
		callTotal += callers(z, callersKnown)
	}
	if !(capTotal > 0) || !(callTotal > 0) {
		return off
	}
	up := capacity(zones[local], opts) / capTotal
	down := callers(zones[local], callersKnown) / callTotal
	if !(down > 0) {
		return off // no calls are expected from the caller's zone
	}
	p := Plan{Local: local, residual: make([]float64, len(zones))}
	if up >= down {
		p.Mode, p.LocalShare, p.local = Direct, 1, math.MaxUint64
		return p
	}
	p.Mode, p.LocalShare = Spill, up/down
	if f := p.LocalShare * 0x1p64; f < 0x1p64 {
		p.local = uint64(f)
	} else {
		p.local = math.MaxUint64
	}
	sum := 0.0
	for i, z := range zones {
		if i != local {
			if spare := capacity(z, opts)/capTotal - callers(z, callersKnown)/callTotal; spare > 0 {
				sum += spare
			}
		}
		p.residual[i] = sum
	}
	if !(sum > 0) {
		// Every other zone is as loaded as its callers make it (rounding):
		// spill in proportion to capacity instead.
		sum = 0
		for i, z := range zones {
			if i != local {
				sum += capacity(z, opts)
			}
			p.residual[i] = sum
		}
	}
	return p
}

func capacity(z Zone, o Options) float64 {
	return min(clean(z.Weight), clean(z.Healthy)*o.Overprovisioning)
}

func callers(z Zone, known bool) float64 {
	if known {
		return clean(z.Callers)
	}
	return max(clean(z.Weight), clean(z.Provisioned))
}

// clean is x where it is a positive finite number, else 0: a NaN,
// negative or infinite weight gives its zone no capacity.
func clean(x float64) float64 {
	if x > 0 && x <= math.MaxFloat64 {
		return x
	}
	return 0
}

// Choose returns the zone (an index of the zones the plan was computed
// from) that serves a call, from one random word u: all of it decides
// whether the call stays local, its low half (as the high bits of the
// draw) where it spills. -1 when the plan is Off (pick among all
// providers).
func (p *Plan) Choose(u uint64) int {
	switch p.Mode {
	case Off:
		return -1
	case Direct:
		return p.Local
	}
	if u < p.local {
		return p.Local
	}
	// The first zone whose cumulative spare capacity exceeds the draw:
	// it has spare capacity of its own, so it is not the local zone.
	x := float64(bits.RotateLeft64(u, 32)>>11) * 0x1p-53 * p.residual[len(p.residual)-1]
	for i, c := range p.residual {
		if c > x {
			return i
		}
	}
	return p.Local // not reached: x < the total
}

// DefaultMemory is the half-life of a zone's provisioned weight once its
// providers leave (Remember).
const DefaultMemory = 10 * time.Minute

// Memory is what a zone's callers remember of its provisioned weight: the
// weight, and when (Unix ns) it was last brought up to date.
type Memory struct {
	Weight float64
	At     int64
}

// Remember returns the memory of a zone whose full weight is now weight,
// given its memory before (the zero Memory for none), with half-life
// halfLife: the larger of weight and the remembered weight, whose excess
// over weight halves every halfLife, so that a zone that loses providers
// keeps its callers (and spills) while they may come back, and one scaled
// down on purpose stops spilling after a few half-lives. A halfLife <= 0
// remembers nothing (the weight itself). Clean weights only: NaN,
// negative and infinite weights count as 0.
func Remember(before Memory, weight float64, now int64, halfLife time.Duration) Memory {
	weight = clean(weight)
	if halfLife <= 0 || !(clean(before.Weight) > weight) {
		return Memory{Weight: weight, At: now}
	}
	dt := float64(max(now-before.At, 0))
	excess := (before.Weight - weight) * math.Exp2(-dt/float64(halfLife))
	return Memory{Weight: weight + excess, At: now}
}
