// Package zone is Envoy's zone-aware routing for every balancer of the
// module: a call stays in the caller's zone while its providers can carry
// that zone's share of the load, and the excess spills to the other zones
// in proportion to their spare capacity. Compute makes a Plan when a
// snapshot is built; Choose turns one random word into a zone without
// allocating. It knows nothing of dubbo-go. Notes: DESIGN.md.
package zone

import (
	"math"
	"math/bits"
	"time"
)

// Defaults of Options: Envoy's min_cluster_size and overprovisioning_factor.
const (
	DefaultMinClusterSize   = 6
	DefaultOverprovisioning = 1.4
)

// Options tune a Plan; the zero value gives the defaults. A zone counts at
// min(its full weight, Overprovisioning (>= 1) × its healthy weight); with
// fewer than MinClusterSize providers zones are ignored (negative: never).
type Options struct {
	MinClusterSize   int
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
	Name      string  // "" for providers that name none
	Providers int     // 0: all left; its callers still count
	Weight    float64 // its providers' weights, as if all were healthy
	Healthy   float64 // the weight of its providers that serve now
	// Callers is the share of the calls that come from this zone, in any
	// unit; 0 for every zone when unknown: each zone then sends calls in
	// proportion to max(Weight, Provisioned), Provisioned being the
	// weight its callers remember (Remember).
	Callers, Provisioned float64
}

// Mode is how a Plan routes.
type Mode uint8

const (
	Off    Mode = iota // zones are ignored
	Direct             // every call stays local (Envoy's LocalityDirect)
	Spill              // a share stays local, the rest spills (LocalityResidual)
)

func (m Mode) String() string { return [...]string{"off", "direct", "spill"}[m] }

// Plan is the routing of one snapshot: which zone serves a call.
type Plan struct {
	Mode       Mode
	Local      int       // the caller's zone (an index of Compute's zones); -1 when Off
	LocalShare float64   // the share of the calls that stay local; 1 when Direct
	local      uint64    // LocalShare as a threshold on a random word
	residual   []float64 // the zones' cumulative spare capacity (none for the local one)
}

// Compute returns the plan for zones, the caller being in zones[local]
// (-1: unknown). It is Off, as in Envoy, with fewer than MinClusterSize
// providers or two zones, a local zone without providers, or when outlier
// ejection is in panic.
func Compute(zones []Zone, local int, panic bool, opts Options) Plan {
	off := Plan{Mode: Off, Local: -1}
	opts = opts.withDefaults()
	if local < 0 || local >= len(zones) || panic || len(zones) < 2 {
		return off
	}
	providers, callersKnown := 0, false
	for _, z := range zones {
		providers += z.Providers
		callersKnown = callersKnown || z.Callers > 0
	}
	if providers < opts.MinClusterSize || zones[local].Providers <= 0 || clean(zones[local].Weight) == 0 {
		return off
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
	p.local = uint64(p.LocalShare * 0x1p64) // up < down: LocalShare <= 1 - 2^-53
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
		// No zone has spare capacity (rounding): spill by capacity.
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

// capacity is the healthy weight, overprovisioned, at most the full weight.
func capacity(z Zone, o Options) float64 {
	return min(clean(z.Weight), clean(z.Healthy)*o.Overprovisioning)
}

func callers(z Zone, known bool) float64 {
	if known {
		return clean(z.Callers)
	}
	return max(clean(z.Weight), clean(z.Provisioned))
}

// clean is x where it is positive and finite, else 0.
func clean(x float64) float64 {
	if x > 0 && x <= math.MaxFloat64 {
		return x
	}
	return 0
}

// Choose returns the zone (an index of Compute's zones) that serves a call,
// from one random word u: all of it decides whether the call stays local,
// its low half where it spills. -1 when the plan is Off.
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
	// The first zone whose cumulative spare capacity exceeds the draw.
	x := float64(bits.RotateLeft64(u, 32)>>11) * 0x1p-53 * p.residual[len(p.residual)-1]
	for i, c := range p.residual {
		if c > x {
			return i
		}
	}
	return p.Local // not reached: x < the total
}

// DefaultMemory is the default half-life of Remember.
const DefaultMemory = 10 * time.Minute

// Memory is a zone's remembered provisioned weight and when (Unix ns) it
// was brought up to date.
type Memory struct {
	Weight float64
	At     int64
}

// Remember returns the memory of a zone whose full weight is now weight,
// given its memory before: the larger of weight and the remembered weight,
// whose excess halves every halfLife (<= 0: no memory). Weights that are
// not positive and finite count as 0.
func Remember(before Memory, weight float64, now int64, halfLife time.Duration) Memory {
	weight = clean(weight)
	if halfLife <= 0 || !(clean(before.Weight) > weight) {
		return Memory{Weight: weight, At: now}
	}
	dt := float64(max(now-before.At, 0))
	excess := (before.Weight - weight) * math.Exp2(-dt/float64(halfLife))
	return Memory{Weight: weight + excess, At: now}
}
