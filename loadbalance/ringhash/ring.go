package ringhash

import (
	"crypto/md5"
	"encoding/binary"
	"math"
	"slices"
	"strconv"
)

// Limits on the virtual nodes per member (hash.nodes) and on a whole ring.
const (
	defaultNodes = 160     // Dubbo's default
	minNodes     = 4       // one md5 digest
	maxNodes     = 1024    // any provider may set hash.nodes; Dubbo has no cap
	maxPoints    = 1 << 22 // members × nodes, about 32 MiB
)

// normalizeNodes returns the virtual nodes per member that buildRing uses
// for a requested n: the default for n <= 0, at least minNodes, at most
// maxNodes, rounded down to a multiple of 4 as Dubbo's n/4 digests are.
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

// effectiveNodes is normalizeNodes(nodes) lowered, for a ring of members
// members, so that the ring holds at most maxPoints points.
func effectiveNodes(members, nodes int) int {
	nodes = normalizeNodes(nodes)
	if members > 0 && int64(members)*int64(nodes) > maxPoints {
		nodes = max(minNodes, (maxPoints/members)&^3)
	}
	return nodes
}

// hashRing is an immutable consistent-hash ring over members identified by
// their position (0, 1, …) in the addresses it was built from. It is safe
// for concurrent use; the zero value is an empty ring.
type hashRing struct {
	// entries are point<<32 | position, every point of every member,
	// sorted. Of equal points (a collision), the last, the member at the
	// latest position, owns the point, as Dubbo's later TreeMap.put wins.
	entries []uint64
	members int
	nodes   int // virtual nodes per member actually used
}

// buildRing returns the ring of Dubbo's ConsistentHashSelector: for each
// address in order and each i in [0, nodes/4), the four little-endian words
// of md5(address + decimal(i)). nodes is lowered by effectiveNodes.
func buildRing(addrs []string, nodes int) *hashRing {
	if len(addrs) > math.MaxInt32 {
		addrs = addrs[:math.MaxInt32]
	}
	r := &hashRing{members: len(addrs), nodes: effectiveNodes(len(addrs), nodes)}
	r.entries = make([]uint64, 0, len(addrs)*r.nodes)
	var buf []byte
	for p, a := range addrs {
		r.entries, buf = appendPoints(r.entries, buf, a, r.nodes, p)
	}
	slices.Sort(r.entries)
	return r
}

// appendPoints appends the nodes entries of the member at position p with
// address a; buf is scratch space, returned for reuse.
func appendPoints(entries []uint64, buf []byte, a string, nodes, p int) ([]uint64, []byte) {
	for i := range nodes / 4 {
		buf = strconv.AppendInt(append(buf[:0], a...), int64(i), 10)
		d := md5.Sum(buf)
		for h := range 4 {
			entries = append(entries, uint64(binary.LittleEndian.Uint32(d[4*h:]))<<32|uint64(p))
		}
	}
	return entries, buf
}

// Rebuild returns buildRing(addrs, nodes), made from r by hashing only the
// newcomers: from[p] is the position in r of the member at position p of
// addrs, -1 for a newcomer. A nil r, or a from that does not fit r, builds
// the ring whole.
func (r *hashRing) Rebuild(addrs []string, from []int, nodes int) *hashRing {
	if r == nil || len(from) != len(addrs) || len(r.entries) == 0 || effectiveNodes(len(addrs), nodes) != r.nodes {
		return buildRing(addrs, nodes)
	}
	to := make([]int, r.members) // to[old position]: the new one, -1 for a member that left
	for i := range to {
		to[i] = -1
	}
	var fresh []uint64
	var buf []byte
	for p, j := range from {
		switch {
		case j < 0:
			fresh, buf = appendPoints(fresh, buf, addrs[p], r.nodes, p)
		case j >= len(to) || to[j] >= 0:
			return buildRing(addrs, nodes)
		default:
			to[j] = p
		}
	}
	slices.Sort(fresh)
	out := make([]uint64, 0, len(r.entries)+len(fresh))
	f := 0
	for _, e := range r.entries {
		p := to[uint32(e)]
		if p < 0 {
			continue
		}
		e = e&^math.MaxUint32 | uint64(p)
		for ; f < len(fresh) && fresh[f] < e; f++ {
			out = append(out, fresh[f])
		}
		out = append(out, e)
	}
	out = append(out, fresh[f:]...)
	// out is sorted by point; members that stay may have changed order
	// within a run of equal points: sort the runs.
	for k := 1; k < len(out); k++ {
		for j := k; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return &hashRing{entries: out, members: len(addrs), nodes: r.nodes}
}

// find returns the index of the entry that owns the first point at or
// after kp, wrapping; -1 on an empty ring.
func (r *hashRing) find(kp uint32) int {
	e := r.entries
	if len(e) == 0 {
		return -1
	}
	k, _ := slices.BinarySearch(e, uint64(kp)<<32)
	if k == len(e) {
		k = 0
	}
	return r.owner(k)
}

// owner returns the index of the entry that owns the point of entry k: the
// last of its run of equal points.
func (r *hashRing) owner(k int) int {
	for k+1 < len(r.entries) && r.entries[k+1]>>32 == r.entries[k]>>32 {
		k++
	}
	return k
}

// Lookup returns the position of the member owning key point kp, Dubbo's
// choice, or -1 on an empty ring. It does not allocate.
func (r *hashRing) Lookup(kp uint32) int {
	k := r.find(kp)
	if k < 0 {
		return -1
	}
	return int(uint32(r.entries[k]))
}

// Shares returns the fraction of the hash space each member owns, by
// position; they add up to 1 (0 on an empty ring). O(points).
func (r *hashRing) Shares() []float64 {
	out := make([]float64, r.members)
	e := r.entries
	if len(e) == 0 {
		return out
	}
	prev := uint32(e[len(e)-1] >> 32)
	for k := 0; k < len(e); k++ {
		k = r.owner(k)
		// A point owns the arc after the point before it (wrapping); a
		// lone point owns everything.
		p := uint32(e[k] >> 32)
		arc := float64(p - prev)
		if arc == 0 {
			arc = 1 << 32
		}
		out[uint32(e[k])] += arc / (1 << 32)
		prev = p
	}
	return out
}

// lookupFunc is Lookup skipping members that accept rejects: the first
// member clockwise from kp that accept accepts, each member offered at most
// once; (-1, false) if none. A rejected member's keys thus spread over the
// others in proportion to their shares. It does not allocate below 1 025
// members.
func (r *hashRing) lookupFunc(kp uint32, accept func(pos int) bool) (int, bool) {
	return r.lookupBounded(kp, math.Inf(1), 0, nil, accept)
}

// boundedCapacity is the load bound of lookupBounded:
// ceil(factor × (totalLoad+1) / members), factor at least 1 (NaN: 1),
// totalLoad at least 0, 0 for no member, saturating at math.MaxInt64.
func boundedCapacity(factor float64, totalLoad int64, members int) int64 {
	if members <= 0 {
		return 0
	}
	if !(factor >= 1) {
		factor = 1
	}
	v := math.Ceil(factor * (float64(max(totalLoad, 0)) + 1) / float64(members))
	if v >= math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(v)
}

// lookupBounded is consistent hashing with bounded loads (Mirrokni et al.;
// Envoy's hash_balance_factor): the first member clockwise from kp that
// accept accepts and whose load is below boundedCapacity(factor,
// totalLoad, members); if every accepted member is at the bound, the first
// accepted. While loads are low it is Lookup. It calls load (nil: no
// bound) and accept at most once per member.
func (r *hashRing) lookupBounded(kp uint32, factor float64, totalLoad int64, load func(pos int) int64, accept func(pos int) bool) (int, bool) {
	limit := boundedCapacity(factor, totalLoad, r.members)
	found, fallback := -1, -1
	r.walk(kp, func(p int) bool {
		if !accept(p) {
			return false
		}
		if fallback < 0 {
			fallback = p
		}
		if load == nil || load(p) < limit {
			found = p
		}
		return found >= 0
	})
	if found < 0 {
		found = fallback
	}
	return found, found >= 0
}

// walk calls visit with each member met clockwise from kp, once each,
// until visit returns true, every member was visited or the turn is done.
func (r *hashRing) walk(kp uint32, visit func(pos int) bool) {
	k := r.find(kp)
	if k < 0 {
		return
	}
	first := int(uint32(r.entries[k]))
	if visit(first) || r.members == 1 {
		return
	}
	var small [16]uint64 // a bitmap of the members visited, up to 1 024
	seen := small[:]
	if words := (r.members + 63) / 64; words > len(small) {
		seen = make([]uint64, words)
	}
	seen[first/64] |= 1 << (first % 64)
	visited := 1
	for range len(r.entries) {
		if k++; k == len(r.entries) {
			k = 0
		}
		k = r.owner(k)
		o := int(uint32(r.entries[k]))
		if seen[o/64]&(1<<(o%64)) != 0 {
			continue
		}
		if visit(o) {
			return
		}
		seen[o/64] |= 1 << (o % 64)
		if visited++; visited == r.members {
			return
		}
	}
}
