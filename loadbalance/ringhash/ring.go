package ringhash

import (
	"crypto/md5"
	"encoding/binary"
	"math"
	"slices"
	"strconv"
)

// Limits on the number of virtual nodes per member ("hash.nodes").
const (
	// defaultNodes is Dubbo's default number of virtual nodes per member.
	defaultNodes = 160
	// minNodes is the smallest usable number of virtual nodes: one md5
	// digest, four points.
	minNodes = 4
	// maxNodes caps the virtual nodes per member; Dubbo has no cap.
	maxNodes = 10000
	// maxPoints caps the points of a whole ring (members × nodes) so a huge
	// configuration cannot exhaust memory; see [buildRing].
	maxPoints = 1 << 24
)

// normalizeNodes returns the number of virtual nodes per member that [buildRing]
// uses for a requested value n:
//
//   - n <= 0 (unset or nonsense) gives [defaultNodes];
//   - 1..3 gives [minNodes] (Dubbo would build an empty ring and fail);
//   - n > [maxNodes] gives maxNodes;
//   - otherwise n rounded down to a multiple of 4, which is what Dubbo's
//     n/4 integer division of digests produces (so 161 behaves as 160).
func normalizeNodes(n int) int {
	switch {
	case n <= 0:
		return defaultNodes
	case n < minNodes:
		return minNodes
	case n > maxNodes:
		return maxNodes
	}
	return n &^ 3
}

// effectiveNodes is the number of virtual nodes per member buildRing uses for
// members members and a requested nodes.
func effectiveNodes(members, nodes int) int {
	nodes = normalizeNodes(nodes)
	if members > 0 && int64(members)*int64(nodes) > maxPoints {
		nodes = max(minNodes, (maxPoints/members)&^3)
	}
	return nodes
}

// ringMember is one ring member as given to [buildRing].
type ringMember struct {
	// Address is the string hashed to place the member, Dubbo's
	// URL.getAddress(): "ip:port" (just "ip" when the port is 0).
	Address string
	// Index is an opaque value returned by lookups to identify the member,
	// typically its position in the caller's provider list.
	Index int
}

// hashRing is an immutable consistent-hash ring. The zero value and a nil *hashRing
// are empty rings. A hashRing is safe for concurrent use.
type hashRing struct {
	points []uint32 // ring points, strictly increasing
	owners []int32  // owners[i]: position in index of the member owning points[i]
	index  []int    // index[pos]: ringMember.Index of the member at position pos
	nodes  int      // virtual nodes per member actually used
	// hidden are the entries (point<<32 | position) that a later member's
	// equal point hides, sorted: a Rebuild without that member shows them
	// again (about P²/2³³ of them for P points: 300 at 1.6 million).
	hidden []uint64
}

// buildRing returns the ring of members with nodes virtual nodes each, laid out
// exactly as Dubbo's ConsistentHashSelector lays out its TreeMap: for each
// member in slice order and each i in [0, nodes/4), the four little-endian
// words of md5(Address + decimal(i)). When two different members produce the
// same point, the one later in members owns it (TreeMap.put replaces), so
// pass members in the same order as the Java consumers to agree even on
// those rare collisions (expected about members²·nodes²/2³³ times).
//
// nodes is normalised by [normalizeNodes]. If members × nodes exceeds
// [MaxPoints], nodes is lowered to the largest multiple of 4 (at least 4)
// that fits, which no longer matches Dubbo; [hashRing.Nodes] reports the value
// used. Empty members give an empty ring. buildRing never panics.
func buildRing(members []ringMember, nodes int) *hashRing {
	if len(members) > math.MaxInt32 {
		members = members[:math.MaxInt32]
	}
	n := len(members)
	nodes = effectiveNodes(n, nodes)
	r := &hashRing{nodes: nodes}
	if n == 0 {
		return r
	}

	// Each entry packs point<<32 | position, so sorting orders by point and,
	// among equal points, by member position: the last entry of a run of
	// equal points is the member Dubbo's later put leaves in place.
	r.index = make([]int, n)
	for pos, m := range members {
		r.index[pos] = m.Index
	}
	entries := hashPoints(nil, members, nil, nodes)
	slices.Sort(entries)
	r.lay(len(entries), func(yield func(uint64)) {
		for _, e := range entries {
			yield(e)
		}
	}, entries)
	return r
}

// hashPoints appends to entries the points of the members whose from is
// -1 (every member when from is nil), each packed point<<32 | position.
func hashPoints(entries []uint64, members []ringMember, from []int, nodes int) []uint64 {
	var buf []byte
	for pos, m := range members {
		if from != nil && from[pos] >= 0 {
			continue
		}
		for i := 0; i < nodes/4; i++ {
			buf = strconv.AppendInt(append(buf[:0], m.Address...), int64(i), 10)
			d := md5.Sum(buf)
			for h := 0; h < 4; h++ {
				p := binary.LittleEndian.Uint32(d[4*h:])
				entries = append(entries, uint64(p)<<32|uint64(pos))
			}
		}
	}
	return entries
}

// lay fills r.points, r.owners and r.hidden from entries, which each yields
// in the order of their points (at most size of them; any order among
// equal points): of a run of equal points, the member at the latest
// position owns the point and the others are hidden. count, when not nil,
// is the same entries as a slice, to size the ring exactly.
func (r *hashRing) lay(size int, each func(yield func(uint64)), count []uint64) {
	if count != nil {
		distinct := 0
		for i, e := range count {
			if i+1 == len(count) || count[i+1]>>32 != e>>32 {
				distinct++
			}
		}
		size = distinct
	}
	r.points = make([]uint32, 0, size)
	r.owners = make([]int32, 0, size)
	each(func(e uint64) {
		p, pos := uint32(e>>32), int32(uint32(e))
		if k := len(r.points) - 1; k >= 0 && r.points[k] == p {
			if pos > r.owners[k] {
				pos, r.owners[k] = r.owners[k], pos
			}
			r.hidden = append(r.hidden, uint64(p)<<32|uint64(uint32(pos)))
			return
		}
		r.points = append(r.points, p)
		r.owners = append(r.owners, pos)
	})
	slices.Sort(r.hidden)
}

// Rebuild returns the ring of members with nodes virtual nodes each, the
// same ring as buildRing(members, nodes), made from r: from[pos] is the position
// in r of the member at pos of members with the same Address, or -1 for a
// member r does not hold. Only those are hashed; the points of the others
// are taken from r in one pass and merged with the new ones, so a change of
// a few members costs O(changed·nodes·log) plus a linear copy of the ring.
// When the virtual nodes per member would change, it is buildRing. Each
// position of r must appear at most once in from.
func (r *hashRing) Rebuild(members []ringMember, from []int, nodes int) *hashRing {
	n := len(members)
	if r == nil || len(from) != n || n == 0 || n > math.MaxInt32 || effectiveNodes(n, nodes) != r.nodes {
		return buildRing(members, nodes)
	}
	to := make([]int32, len(r.index)) // position in r → in members, -1: gone
	for i := range to {
		to[i] = -1
	}
	for pos, j := range from {
		if j >= len(to) || j >= 0 && to[j] >= 0 {
			return buildRing(members, nodes) // a caller's mistake: no ring of r's
		}
		if j >= 0 {
			to[j] = int32(pos)
		}
	}
	fresh := hashPoints(nil, members, from, r.nodes)
	slices.Sort(fresh)
	nr := &hashRing{nodes: r.nodes, index: make([]int, n)}
	for pos, m := range members {
		nr.index[pos] = m.Index
	}
	nr.lay(len(r.points)+len(fresh), func(yield func(uint64)) {
		// Three sorted streams: r's points, r's hidden entries, the fresh
		// points; the first two remapped to positions in members, dropping
		// the members that left.
		i, h, f := 0, 0, 0
		for {
			for i < len(r.points) && to[r.owners[i]] < 0 {
				i++
			}
			for h < len(r.hidden) && to[uint32(r.hidden[h])] < 0 {
				h++
			}
			var e uint64
			switch {
			case i < len(r.points) && (h == len(r.hidden) || r.points[i] <= uint32(r.hidden[h]>>32)) &&
				(f == len(fresh) || r.points[i] <= uint32(fresh[f]>>32)):
				e = uint64(r.points[i])<<32 | uint64(to[r.owners[i]])
				i++
			case h < len(r.hidden) && (f == len(fresh) || r.hidden[h]>>32 <= fresh[f]>>32):
				e = r.hidden[h]&^0xffffffff | uint64(to[uint32(r.hidden[h])])
				h++
			case f < len(fresh):
				e = fresh[f]
				f++
			default:
				return
			}
			yield(e)
		}
	}, nil)
	return nr
}

// Len returns the number of distinct points on the ring.
func (r *hashRing) Len() int {
	if r == nil {
		return 0
	}
	return len(r.points)
}

// Members returns the number of members the ring was built from.
func (r *hashRing) Members() int {
	if r == nil {
		return 0
	}
	return len(r.index)
}

// Nodes returns the number of virtual nodes per member the ring was built
// with, after normalisation (see [buildRing]).
func (r *hashRing) Nodes() int {
	if r == nil {
		return normalizeNodes(0)
	}
	return r.nodes
}

// search returns the position of the first point at or after keyPoint,
// wrapping to 0 past the last point, or -1 if the ring is empty. Positions
// run from 0 to Len()-1; step clockwise with pos+1, wrapping at Len().
func (r *hashRing) search(keyPoint uint32) int {
	if r.Len() == 0 {
		return -1
	}
	// Hand-rolled lower bound: first i with points[i] >= keyPoint.
	lo, hi := 0, len(r.points)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if r.points[mid] < keyPoint {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo == len(r.points) {
		lo = 0
	}
	return lo
}

// At returns the point at position pos (see [hashRing.search]) and the Index of
// the member owning it. pos is taken modulo Len(); on an empty ring At
// returns (0, -1).
func (r *hashRing) At(pos int) (point uint32, index int) {
	n := r.Len()
	if n == 0 {
		return 0, -1
	}
	if pos < 0 || pos >= n {
		pos %= n
		if pos < 0 {
			pos += n
		}
	}
	return r.points[pos], r.index[r.owners[pos]]
}

// Shares returns the fraction of the hash space that each member owns, in
// the order of the members given to Build: the keys that go to it while
// every member is available. The fractions add up to 1 (0 on an empty
// ring). O(Len()); for inspection, not for picks.
func (r *hashRing) Shares() []float64 {
	out := make([]float64, r.Members())
	n := r.Len()
	if n == 1 {
		out[r.owners[0]] = 1
	}
	if n <= 1 {
		return out
	}
	for k, p := range r.points {
		// A point owns the keys after the point before it, up to itself;
		// the first point's arc wraps past 2^32 (uint32 arithmetic).
		arc := p - r.points[(k+n-1)%n]
		out[r.owners[k]] += float64(arc) / (1 << 32)
	}
	return out
}

// Lookup returns the Index of the member owning keyPoint (the first point at
// or after it, wrapping), the member Dubbo would choose, or -1 if the ring is
// empty. It does not allocate.
func (r *hashRing) Lookup(keyPoint uint32) int {
	pos := r.search(keyPoint)
	if pos < 0 {
		return -1
	}
	return r.index[r.owners[pos]]
}

// lookupFunc is [hashRing.Lookup] skipping rejected members: it walks clockwise
// from keyPoint's point and returns the Index of the first member for which
// accept returns true. Each member is offered to accept at most once, and the
// walk stops after one full turn or once every member has been rejected; it
// then returns (-1, false). A nil accept accepts everything.
//
// Because the walk continues to the next point of a different member, keys
// of a rejected member spread over the other members in proportion to their
// share of the ring, and return to it as soon as it is accepted again.
// lookupFunc does not allocate, except once for a small bitmap when it
// rejects members of a ring of more than 1024 members.
func (r *hashRing) lookupFunc(keyPoint uint32, accept func(index int) bool) (index int, ok bool) {
	var found int32 = -1
	r.walk(keyPoint, func(pos int32) bool {
		if accept == nil || accept(r.index[pos]) {
			found = pos
			return true
		}
		return false
	})
	if found < 0 {
		return -1, false
	}
	return r.index[found], true
}

// boundedCapacity returns the per-member load bound used by
// [hashRing.lookupBounded]: ceil(factor × (totalLoad+1) / members), the average
// load after placing one more request, scaled by factor.
//
// factor below 1 or NaN is taken as 1; a negative totalLoad as 0; members <= 0
// gives 0. The result saturates at math.MaxInt64 (so factor = +Inf means no
// bound). It is computed in float64, which can only round the bound up.
func boundedCapacity(factor float64, totalLoad int64, members int) int64 {
	if members <= 0 {
		return 0
	}
	if !(factor >= 1) {
		factor = 1
	}
	totalLoad = max(totalLoad, 0)
	v := math.Ceil(factor * (float64(totalLoad) + 1) / float64(members))
	if v >= math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(v)
}

// lookupBounded is consistent hashing with bounded loads (Mirrokni et al.,
// Envoy's hash_balance_factor). load(index) reports a member's current load,
// normally its number of in-flight requests, and totalLoad the sum of load
// over all members of the ring. Walking clockwise from keyPoint as
// [hashRing.lookupFunc] does, it returns the first member that accept accepts
// (nil accepts all) and whose load+1 <= [boundedCapacity](factor, totalLoad,
// Members()).
//
// A key therefore stays on its Dubbo member while that member carries no more
// than factor times the average load, and overflows clockwise to the next
// members otherwise; when loads are low the choice equals Lookup. Since the
// loads sum to totalLoad, some member is always under the bound (a factor of
// 1.25 is a common choice: no member exceeds 125 % of the average). If every
// accepted member is at its bound (possible only when load and totalLoad
// disagree or members are rejected), the first accepted member clockwise is
// returned. (-1, false) means no member was accepted.
//
// Each member's load and accept are called at most once; lookupBounded does
// not allocate, with the same exception as lookupFunc.
func (r *hashRing) lookupBounded(keyPoint uint32, factor float64, totalLoad int64, load func(index int) int64, accept func(index int) bool) (index int, ok bool) {
	if load == nil {
		return r.lookupFunc(keyPoint, accept)
	}
	limit := boundedCapacity(factor, totalLoad, r.Members())
	var found, fallback int32 = -1, -1
	r.walk(keyPoint, func(pos int32) bool {
		idx := r.index[pos]
		if accept != nil && !accept(idx) {
			return false
		}
		if fallback < 0 {
			fallback = pos
		}
		if l := load(idx); l < limit { // l+1 <= limit without overflow
			found = pos
			return true
		}
		return false
	})
	if found < 0 {
		found = fallback
	}
	if found < 0 {
		return -1, false
	}
	return r.index[found], true
}

// walk calls visit with the position (in r.index) of each distinct member met
// clockwise from keyPoint's point, at most once per member, until visit
// returns true, every member has been visited, or one full turn is done.
func (r *hashRing) walk(keyPoint uint32, visit func(pos int32) bool) {
	start := r.search(keyPoint)
	if start < 0 {
		return
	}
	members := len(r.index)
	// First candidate: the common case, with no bookkeeping.
	last := r.owners[start]
	if visit(last) || members == 1 {
		return
	}
	var small [16]uint64 // visited bitmap, enough for 1024 members
	var seen []uint64
	if words := (members + 63) / 64; words <= len(small) {
		seen = small[:words]
	} else {
		seen = make([]uint64, words)
	}
	seen[last/64] |= 1 << (last % 64)
	visited := 1
	n := len(r.points)
	for k := 1; k < n; k++ {
		i := start + k
		if i >= n {
			i -= n
		}
		o := r.owners[i]
		if o == last {
			continue
		}
		last = o
		if seen[o/64]&(1<<(o%64)) != 0 {
			continue
		}
		if visit(o) {
			return
		}
		seen[o/64] |= 1 << (o % 64)
		if visited++; visited == members {
			return
		}
	}
}
