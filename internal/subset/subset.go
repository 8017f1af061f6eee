// Package subset chooses which providers of a service one consumer holds, so
// that in a fleet of thousands of consumers and providers each consumer
// connects to, tracks and exports a few of them only.
//
// Two methods, chosen by what the consumer knows of the fleet:
//
//   - Deterministic aperture (Finagle) when the consumer knows its position
//     among the consumers of the service (Consumer.Count > 0): the providers
//     are equal slots of a ring, the consumers evenly spaced round it, and a
//     consumer holds a window of Size slots from its place. Every provider
//     gets the same number of consumers (± 1); a provider joining or leaving
//     changes at most one member of each subset.
//   - Rendezvous hashing (gRFC A68) otherwise: each consumer ranks every
//     provider by a hash of (its own ID, the provider's Key) and holds the
//     first ones. A provider joining or leaving changes at most one member of
//     each subset; a consumer joining changes no other subset.
//
// The package is pure: no clock, no randomness beyond hashing, no I/O, no
// global state but a pool of scratch buffers. DESIGN.md has the reasoning
// and the measured figures.
package subset

import (
	"cmp"
	"math"
	"slices"
	"sync"
)

// Provider is one member of the full set, as the registry lists it.
type Provider struct {
	// Key is the provider's stable identity, e.g. "host:port". Providers with
	// the same Key are one provider (see Select).
	Key string
	// Weight is the provider's weight as the consumer reads it. NaN and
	// negative weights count as 0, weights above MaxWeight (and +Inf) as
	// MaxWeight; when every weight is 0, every provider counts as equal. It
	// sets each zone's part of Size and weighs rendezvous' draw; aperture's
	// slots are equal whatever the weights.
	Weight float64
	// Zone is the provider's zone ("" is a zone like any other).
	Zone string
}

// Consumer is one consumer's place in the fleet.
type Consumer struct {
	// ID is the stable identity of this consumer (e.g. "host:port" or the
	// application instance id). It seeds rendezvous hashing.
	ID string
	// Index is the consumer's position among the consumers of the service,
	// 0-based, in an order every consumer agrees on (e.g. sorted by ID). It is
	// read when Count > 0, modulo Count.
	Index int
	// Count is the number of consumers of the service as the registry lists
	// them; 0 (or less) means unknown, and rendezvous hashing is used.
	Count int
}

// Options are the consumer's settings. The zero value turns subsetting off.
type Options struct {
	// Size is the number of providers a consumer holds (lb.subset.size), and
	// the number of serving ones it keeps when some do not serve. 0 or less
	// turns subsetting off: Select returns every provider. A Size at or above
	// the number of providers holds them all; there is no other bound. gRPC's
	// random subsetting (A68) defaults to 20. Where the consumers are too few
	// for aperture to cover every provider with Size each, each holds
	// ⌈providers/consumers⌉ (a lone consumer holds them all), so that every
	// provider has a consumer.
	Size int
	// Zones subsets within each zone: each zone gets a part of Size in
	// proportion to its weight share, at least 1 where it has providers, so
	// that zone-aware routing still sees every zone.
	Zones bool
	// TypicalWeight is the weight of a typical provider, used by rendezvous
	// hashing to make a provider's share of the load track its weight share
	// (see DESIGN.md). 0 (or less, or not finite) means 100, Dubbo's default
	// weight; above MaxWeight counts as MaxWeight. It is a setting rather than the fleet's mean so that a provider
	// joining or leaving never moves more than one member of a subset.
	TypicalWeight float64
}

// MaxWeight bounds a provider's weight.
const MaxWeight = 1e9

// defaultTypicalWeight is Dubbo's default provider weight.
const defaultTypicalWeight = 100

// Select returns the indices into ps of the providers consumer c holds,
// ascending, appended to dst[:0] (pass a reused slice to avoid allocating).
//
// excluded(i) reports providers that do not serve now (ejected, unhealthy);
// nil means none. The subset grows past excluded members, which it keeps,
// until it holds Size serving ones or every provider, per zone with
// opts.Zones.
//
// Providers with the same Key are one provider: the one of highest weight,
// then smallest Zone, then smallest index is kept, the others are never
// returned. The result depends on the providers' contents only, not on their
// order in ps. With opts.Size <= 0 every index of ps is returned.
//
// Select costs O(n) for n providers (O(n log n) with opts.Zones) and
// allocates nothing beyond dst in the steady state; it is safe for concurrent
// use.
func Select(dst []int, ps []Provider, c Consumer, opts Options, excluded func(i int) bool) []int {
	dst = dst[:0]
	if opts.Size <= 0 {
		for i := range ps {
			dst = append(dst, i)
		}
		return dst
	}
	s := scratchPool.Get().(*scratch)
	defer func() {
		s.ps = nil // do not keep the caller's list alive
		scratchPool.Put(s)
	}()
	s.load(ps, opts.Zones)
	if excluded == nil {
		excluded = func(int) bool { return false }
	}
	tw := opts.TypicalWeight
	if !(tw > 0) || math.IsInf(tw, 0) {
		tw = defaultTypicalWeight
	}
	for _, z := range s.zoneSizes(opts.Size) {
		members := s.members[z.lo:z.hi]
		if c.Count > 0 {
			dst = aperture(dst, members, z.size, c, excluded)
		} else {
			dst = rendezvous(dst, s, members, z.size, seedOf(c.ID), min(tw, MaxWeight), excluded)
		}
	}
	slices.Sort(dst)
	return dst
}

// member is one distinct provider: its index in ps, sanitised weight and the
// hash of its key, which orders the ring.
type member struct {
	i    int
	w    float64
	hash uint64
}

// zoneSpan is one zone's members, s.members[lo:hi], their total weight w,
// their share of Select's size and the part of it they get.
type zoneSpan struct {
	lo, hi, size int
	w, share     float64
}

// scratch holds one Select's working memory, pooled so that Select does not
// allocate in the steady state.
type scratch struct {
	ps      []Provider
	members []member
	zones   []zoneSpan
	order   []int
	ranked  []ranked
	tmp     []member
	tmpR    []ranked
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// load fills s.members with the distinct providers of ps in ring order (by
// key hash, then key), grouped by zone when zones, and s.zones with each
// zone's span.
func (s *scratch) load(ps []Provider, zones bool) {
	s.ps = ps
	s.members = s.members[:0]
	for i := range ps {
		s.members = append(s.members, member{i: i, w: sanitizeWeight(ps[i].Weight), hash: hashString(ps[i].Key)})
	}
	s.tmp = sortByKey(s.members, s.tmp, memberHash, func(a, b member) int {
		if c := cmp.Compare(ps[a.i].Key, ps[b.i].Key); c != 0 {
			return c
		}
		// Duplicates of one key: the one kept (the first) is decided by content.
		if c := cmp.Compare(b.w, a.w); c != 0 {
			return c
		}
		if c := cmp.Compare(ps[a.i].Zone, ps[b.i].Zone); c != 0 {
			return c
		}
		return cmp.Compare(a.i, b.i)
	})
	s.members = slices.CompactFunc(s.members, func(a, b member) bool { return ps[a.i].Key == ps[b.i].Key })
	if zones {
		slices.SortFunc(s.members, func(a, b member) int {
			if c := cmp.Compare(ps[a.i].Zone, ps[b.i].Zone); c != 0 {
				return c
			}
			return s.ringOrder(a, b)
		})
	}
	allZero := true
	for _, m := range s.members {
		if m.w > 0 {
			allZero = false
			break
		}
	}
	if allZero {
		for k := range s.members {
			s.members[k].w = 1
		}
	}
	s.zones = s.zones[:0]
	lo := 0
	for k := 1; k <= len(s.members); k++ {
		if k == len(s.members) || (zones && ps[s.members[k].i].Zone != ps[s.members[lo].i].Zone) {
			s.zones = append(s.zones, zoneSpan{lo: lo, hi: k})
			lo = k
		}
	}
}

func memberHash(m member) uint64 { return m.hash }

// ringOrder orders members by key hash, then key.
func (s *scratch) ringOrder(a, b member) int {
	if c := cmp.Compare(a.hash, b.hash); c != 0 {
		return c
	}
	return cmp.Compare(s.ps[a.i].Key, s.ps[b.i].Key)
}

// zoneSizes sets each zone's part of size: in proportion to the zone's
// weight (largest remainders), at least 1, at most the zone's providers; what
// a full zone cannot take goes to the others in the same order.
func (s *scratch) zoneSizes(size int) []zoneSpan {
	if len(s.zones) == 1 {
		s.zones[0].size = size
		return s.zones
	}
	total := 0.0
	for k := range s.zones {
		z := &s.zones[k]
		z.w = 0
		for _, m := range s.members[z.lo:z.hi] {
			z.w += m.w
		}
		total += z.w
	}
	given := 0
	for k := range s.zones {
		z := &s.zones[k]
		z.share = float64(size) * z.w / total
		z.size = min(max(1, int(z.share)), z.hi-z.lo)
		given += z.size
	}
	if given >= size {
		return s.zones
	}
	s.order = s.order[:0]
	for k := range s.zones {
		s.order = append(s.order, k)
	}
	slices.SortStableFunc(s.order, func(a, b int) int {
		za, zb := &s.zones[a], &s.zones[b]
		return cmp.Compare(zb.share-float64(zb.size), za.share-float64(za.size))
	})
	for _, k := range s.order { // one each by largest remainder
		if given == size {
			break
		}
		if z := &s.zones[k]; z.size < z.hi-z.lo {
			z.size++
			given++
		}
	}
	for _, k := range s.order { // then fill, when full zones left some over
		z := &s.zones[k]
		add := min(size-given, z.hi-z.lo-z.size)
		z.size += add
		given += add
	}
	return s.zones
}

func sanitizeWeight(w float64) float64 {
	switch {
	case !(w > 0): // NaN, zero, negative
		return 0
	case w > MaxWeight: // +Inf too
		return MaxWeight
	}
	return w
}
