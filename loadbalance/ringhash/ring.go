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
	// maxNodes caps the virtual nodes per member (hash.nodes, which any
	// provider may set); Dubbo has no cap. 1 024 is 6.4 times Dubbo's
	// default: a larger value, replaced with a problem, is no longer
	// Dubbo Java's ring.
	maxNodes = 1024
	// maxPoints caps the points of a whole ring (members × nodes), about
	// 32 MiB, so that no configuration can exhaust memory; see
	// [buildRing]. Dubbo's default of 160 nodes stays exact, and Java's
	// ring with it, up to 26 214 providers.
	maxPoints = 1 << 22
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

// chunkSize returns the size, in points, of the chunks of a ring of points
// points (see [hashRing]): Rebuild splits a chunk that grows past twice
// that and joins one that falls below a quarter of it to the next. A
// change of one member copies the chunks its 2 × nodes points fall in, and
// the chunk directory (12 bytes a chunk): their sum is smallest near
// √(points/128), rounded down to a power of two, from 16 to 1024 (32 for
// 1 000 members of 160 points, 64 for 10 000).
func chunkSize(points int) int {
	size := 16
	for size < 1024 && 2*size*2*size*128 <= points {
		size *= 2
	}
	return size
}

// deleted is the slot of an edit that removes its point (see Rebuild).
const deleted = math.MaxUint32

// hashRing is an immutable consistent-hash ring. The zero value and a nil *hashRing
// are empty rings. A hashRing is safe for concurrent use.
//
// Each point is an entry point<<32 | slot: the slot is the member's place in
// the ring's tables, which a member keeps across Rebuilds for as long as it
// stays. The entries are kept in chunks of about chunkSize points, so that
// Rebuild copies only the chunks a change touches and shares the others
// with the ring it was made from.
type hashRing struct {
	chunks []*[]uint64 // the entries in increasing point order; no chunk is empty
	firsts []uint32    // firsts[c]: the first point of chunks[c]
	points int         // the number of entries in chunks
	chunk  int         // the chunk size (chunkSize) of the ring built whole
	index  []int       // index[slot]: the ringMember.Index of its member, -1 for a free slot
	pos    []int32     // pos[slot]: its member's position in members, -1 for a free slot
	slots  []int32     // slots[position]: the slot of the member at position
	// members are the members as given (Rebuild hashes again those that leave).
	members []ringMember
	nodes   int // virtual nodes per member actually used
	// hidden are the entries that the equal point of a member later in
	// members hides, sorted: a Rebuild without that member shows them
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
// used. Empty members give an empty ring. buildRing never panics. The ring
// keeps members: do not change them afterwards.
func buildRing(members []ringMember, nodes int) *hashRing {
	if len(members) > math.MaxInt32 {
		members = members[:math.MaxInt32]
	}
	n := len(members)
	nodes = effectiveNodes(n, nodes)
	r := &hashRing{nodes: nodes, members: members}
	if n == 0 {
		return r
	}
	// A ring built whole gives the member at each position that slot.
	r.index, r.pos, r.slots = make([]int, n), make([]int32, n), make([]int32, n)
	entries := make([]uint64, 0, n*nodes)
	var buf []byte
	for p, m := range members {
		r.index[p], r.pos[p], r.slots[p] = m.Index, int32(p), int32(p)
		entries, buf = appendPoints(entries, buf, m.Address, nodes, int32(p))
	}
	// Sorting orders the entries by point and, among equal points, by
	// slot, which is the position here: the last of a run of equal points
	// is the member Dubbo's later put leaves in place.
	slices.Sort(entries)
	visible := entries[:0]
	for i, e := range entries {
		if i+1 < len(entries) && entries[i+1]>>32 == e>>32 {
			r.hidden = append(r.hidden, e)
			continue
		}
		visible = append(visible, e)
	}
	var chunks []*[]uint64
	r.chunk = chunkSize(len(visible))
	for len(visible) > 0 {
		k := min(r.chunk, len(visible))
		ch := slices.Clone(visible[:k]) // apart: a chunk outlives its neighbours
		chunks = append(chunks, &ch)
		visible = visible[k:]
	}
	r.setChunks(chunks)
	return r
}

// appendPoints appends to entries the nodes points of address, each packed
// point<<32 | slot; buf is scratch space, returned for reuse.
func appendPoints(entries []uint64, buf []byte, address string, nodes int, slot int32) ([]uint64, []byte) {
	for i := 0; i < nodes/4; i++ {
		buf = strconv.AppendInt(append(buf[:0], address...), int64(i), 10)
		d := md5.Sum(buf)
		for h := 0; h < 4; h++ {
			p := binary.LittleEndian.Uint32(d[4*h:])
			entries = append(entries, uint64(p)<<32|uint64(uint32(slot)))
		}
	}
	return entries, buf
}

// setChunks makes chunks the ring's points, with their firsts.
func (r *hashRing) setChunks(chunks []*[]uint64) {
	r.chunks, r.points = chunks, 0
	r.firsts = make([]uint32, len(chunks))
	for c, ch := range chunks {
		r.firsts[c] = uint32((*ch)[0] >> 32)
		r.points += len(*ch)
	}
}

// chunkAt returns the entries of chunk c.
func (r *hashRing) chunkAt(c int) []uint64 { return *r.chunks[c] }

// Rebuild returns the ring of members with nodes virtual nodes each, the
// same ring as buildRing(members, nodes), made from r: from[pos] is the position
// in r of the member at pos of members with the same Address, or -1 for a
// member r does not hold. Each position of r must appear at most once in
// from. When the virtual nodes per member would change, or more than a
// quarter of the members come or go, it is buildRing.
//
// Only the members that come and those that leave are hashed; the points of
// the others stay where they are, in chunks shared with r. A change of a
// few members costs O(changed·nodes·log P) for P points, a copy of the
// chunks it touches (a member's points fall in about nodes of them), and a
// linear copy of the per-member tables and of the chunk directory. The ring keeps
// members: do not change them afterwards.
func (r *hashRing) Rebuild(members []ringMember, from []int, nodes int) *hashRing {
	n := len(members)
	if r == nil || len(from) != n || n == 0 || n > math.MaxInt32 || r.Len() == 0 || effectiveNodes(n, nodes) != r.nodes {
		return buildRing(members, nodes)
	}
	// The members that stay keep their slots; the newcomers take the
	// slots free in r (not those freed now: r's entries still name them),
	// then new ones.
	newcomers, free := 0, 0
	for _, j := range from {
		if j >= len(r.slots) {
			return buildRing(members, nodes) // a caller's mistake: no ring of r's
		}
		if j < 0 {
			newcomers++
		}
	}
	for _, p := range r.pos {
		if p < 0 {
			free++
		}
	}
	if left := len(r.slots) - (n - newcomers); 4*(newcomers+left) > n+len(r.slots) {
		// More than a quarter of the members come or go: most chunks
		// would be copied anyway, and a whole build hashes fewer members.
		return buildRing(members, nodes)
	}
	size := len(r.pos) + max(0, newcomers-free)
	nr := &hashRing{nodes: r.nodes, chunk: r.chunk, members: members,
		index: make([]int, size), pos: make([]int32, size), slots: make([]int32, n)}
	for s := range nr.pos {
		nr.index[s], nr.pos[s] = -1, -1
	}
	for p, j := range from {
		if j < 0 {
			continue
		}
		s := r.slots[j]
		if nr.pos[s] >= 0 {
			return buildRing(members, nodes) // a position of r given twice
		}
		nr.pos[s], nr.slots[p], nr.index[s] = int32(p), s, members[p].Index
	}
	next := 0
	var fresh, gone []uint64
	var buf []byte
	for p, j := range from {
		if j >= 0 {
			continue
		}
		for next < len(r.pos) && r.pos[next] >= 0 {
			next++
		}
		nr.pos[next], nr.slots[p], nr.index[next] = int32(p), int32(next), members[p].Index
		fresh, buf = appendPoints(fresh, buf, members[p].Address, r.nodes, int32(next))
		next++
	}
	for s, p := range r.pos {
		if p >= 0 && nr.pos[s] < 0 {
			gone, buf = appendPoints(gone, buf, r.members[p].Address, r.nodes, int32(s))
		}
	}
	slices.Sort(fresh)
	slices.Sort(gone)
	edits, hidden := r.resolve(nr.pos, fresh, gone)
	nr.hidden = hidden
	nr.setChunks(r.patch(edits))
	return nr
}

// resolve returns the edits (point<<32 | owner slot, or deleted) that turn
// r's points into those of a ring whose members sit at pos (by slot), with
// the fresh entries added (sorted) and the members that left gone (gone:
// their points, sorted), and the new ring's hidden entries. It decides
// every point that an entry comes to, leaves or hides: of the entries left
// at a point, the member at the latest position owns it and the others
// are hidden, as in buildRing. A point whose owner stays has no edit.
func (r *hashRing) resolve(pos []int32, fresh, gone []uint64) (edits, hidden []uint64) {
	f, g, h := 0, 0, 0
	var cands []int32
	for f < len(fresh) || g < len(gone) || h < len(r.hidden) {
		p := uint32(math.MaxUint32)
		for _, s := range [...][]uint64{fresh[f:], gone[g:], r.hidden[h:]} {
			if len(s) > 0 {
				p = min(p, uint32(s[0]>>32))
			}
		}
		cands = cands[:0]
		was, had := r.owner(p)
		if had && pos[was] >= 0 {
			cands = append(cands, was)
		}
		for ; h < len(r.hidden) && uint32(r.hidden[h]>>32) == p; h++ {
			if s := int32(uint32(r.hidden[h])); pos[s] >= 0 {
				cands = append(cands, s)
			}
		}
		for ; f < len(fresh) && uint32(fresh[f]>>32) == p; f++ {
			cands = append(cands, int32(uint32(fresh[f])))
		}
		for g < len(gone) && uint32(gone[g]>>32) == p {
			g++
		}
		if len(cands) == 0 {
			edits = append(edits, uint64(p)<<32|deleted)
			continue
		}
		win := 0
		for k, s := range cands {
			if pos[s] > pos[cands[win]] {
				win = k
			}
		}
		if !had || cands[win] != was {
			edits = append(edits, uint64(p)<<32|uint64(cands[win]))
		}
		for k, s := range cands {
			if k != win {
				hidden = append(hidden, uint64(p)<<32|uint64(s))
			}
		}
	}
	slices.Sort(hidden)
	return edits, hidden
}

// owner returns the slot that owns point p exactly, if p is a point of r.
func (r *hashRing) owner(p uint32) (int32, bool) {
	c, k := r.locate(p)
	if c == len(r.chunks) || uint32(r.chunkAt(c)[k]>>32) != p {
		return 0, false
	}
	return int32(uint32(r.chunkAt(c)[k])), true
}

// patch returns r's chunks with edits (sorted by point) applied: an edit
// sets its point's owner, adding the point if r lacks it, or removes it.
// A chunk no edit touches is r's own; one that grows past twice r.chunk is
// split into pieces of at most r.chunk, one that falls below a quarter of
// it joins the next.
func (r *hashRing) patch(edits []uint64) []*[]uint64 {
	out := make([]*[]uint64, 0, len(r.chunks)+len(edits)/r.chunk+1)
	var carry []uint64 // a short chunk, to join the next
	e := 0
	for c, shared := range r.chunks {
		ch := *shared
		end := len(edits) // the edits of chunk c: those before the next chunk's first point
		if c+1 < len(r.chunks) {
			next := uint64(r.firsts[c+1]) << 32
			end = e
			for end < len(edits) && edits[end] < next {
				end++
			}
		}
		if end == e && carry == nil {
			out = append(out, shared)
			continue
		}
		merged := make([]uint64, len(carry), len(carry)+len(ch)+end-e)
		copy(merged, carry)
		merged, carry = applyEdits(merged, ch, edits[e:end]), nil
		e = end
		switch {
		case len(merged) == 0: // every point of the chunk left
		case len(merged) > 2*r.chunk:
			pieces := (len(merged) + r.chunk - 1) / r.chunk
			size := (len(merged) + pieces - 1) / pieces
			for len(merged) > 0 {
				k := min(size, len(merged))
				piece := merged[:k:k]
				out = append(out, &piece)
				merged = merged[k:]
			}
		case 4*len(merged) < r.chunk && c+1 < len(r.chunks):
			carry = merged
		default:
			out = append(out, &merged)
		}
	}
	return out
}

// applyEdits appends to dst the entries of ch with edits (sorted, each at
// or after ch's first point but for those of the first chunk) applied.
func applyEdits(dst, ch, edits []uint64) []uint64 {
	i := 0
	for _, ed := range edits {
		p := ed >> 32
		for i < len(ch) && ch[i]>>32 < p {
			dst = append(dst, ch[i])
			i++
		}
		if i < len(ch) && ch[i]>>32 == p {
			i++ // replaced or removed
		}
		if uint32(ed) != deleted {
			dst = append(dst, ed)
		}
	}
	return append(dst, ch[i:]...)
}

// Len returns the number of distinct points on the ring.
func (r *hashRing) Len() int {
	if r == nil {
		return 0
	}
	return r.points
}

// Members returns the number of members the ring was built from.
func (r *hashRing) Members() int {
	if r == nil {
		return 0
	}
	return len(r.slots)
}

// Nodes returns the number of virtual nodes per member the ring was built
// with, after normalisation (see [buildRing]).
func (r *hashRing) Nodes() int {
	if r == nil {
		return normalizeNodes(0)
	}
	return r.nodes
}

// locate returns the chunk and offset of the first point at or after p,
// without wrapping: c == len(r.chunks) when p is past the last point.
func (r *hashRing) locate(p uint32) (c, k int) {
	// c: the last chunk whose first point is at most p (hand-rolled
	// binary searches: no closure, no generic call on the pick).
	lo, hi := 0, len(r.firsts)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if r.firsts[mid] <= p {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo == 0 {
		return 0, 0
	}
	c = lo - 1
	ch := r.chunkAt(c)
	key := uint64(p) << 32
	lo, hi = 0, len(ch)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if ch[mid] < key {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo == len(ch) {
		return c + 1, 0 // the next chunk's first point, greater than p
	}
	return c, lo
}

// search returns the position of the first point at or after keyPoint,
// wrapping to 0 past the last point, or -1 if the ring is empty. Positions
// run from 0 to Len()-1; step clockwise with pos+1, wrapping at Len().
// O(Len()/chunk): for tests and inspection.
func (r *hashRing) search(keyPoint uint32) int {
	if r.Len() == 0 {
		return -1
	}
	c, k := r.locate(keyPoint)
	if c == len(r.chunks) {
		return 0
	}
	for _, ch := range r.chunks[:c] {
		k += len(*ch)
	}
	return k
}

// entry returns the entry at position pos, 0 <= pos < Len(), in
// O(Len()/chunk): for tests and inspection.
func (r *hashRing) entry(pos int) uint64 {
	c := 0
	for pos >= len(r.chunkAt(c)) {
		pos -= len(r.chunkAt(c))
		c++
	}
	return r.chunkAt(c)[pos]
}

// At returns the point at position pos (see [hashRing.search]) and the Index of
// the member owning it. pos is taken modulo Len(); on an empty ring At
// returns (0, -1). O(Len()/chunk): for tests and inspection.
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
	e := r.entry(pos)
	return uint32(e >> 32), r.index[uint32(e)]
}

// Shares returns the fraction of the hash space that each member owns, in
// the order of the members given to Build: the keys that go to it while
// every member is available. The fractions add up to 1 (0 on an empty
// ring). O(Len()); for inspection, not for picks.
func (r *hashRing) Shares() []float64 {
	out := make([]float64, r.Members())
	n := r.Len()
	if n == 0 {
		return out
	}
	last := r.chunkAt(len(r.chunks) - 1)
	prev := uint32(last[len(last)-1] >> 32)
	for _, ch := range r.chunks {
		for _, e := range *ch {
			// A point owns the keys after the point before it, up to
			// itself; the first point's arc wraps past 2^32 (uint32
			// arithmetic). A lone point owns everything.
			p := uint32(e >> 32)
			arc := float64(p - prev)
			if n == 1 {
				arc = 1 << 32
			}
			out[r.pos[uint32(e)]] += arc / (1 << 32)
			prev = p
		}
	}
	return out
}

// Lookup returns the Index of the member owning keyPoint (the first point at
// or after it, wrapping), the member Dubbo would choose, or -1 if the ring is
// empty. It does not allocate.
func (r *hashRing) Lookup(keyPoint uint32) int {
	if r.Len() == 0 {
		return -1
	}
	c, k := r.locate(keyPoint)
	if c == len(r.chunks) {
		c, k = 0, 0
	}
	return r.index[uint32(r.chunkAt(c)[k])]
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
// rejects members of a ring of more than 1024 slots (its members, and
// after a Rebuild up to as many more as last came while others left).
func (r *hashRing) lookupFunc(keyPoint uint32, accept func(index int) bool) (index int, ok bool) {
	var found int32 = -1
	r.walk(keyPoint, func(slot int32) bool {
		if accept == nil || accept(r.index[slot]) {
			found = slot
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
	r.walk(keyPoint, func(slot int32) bool {
		idx := r.index[slot]
		if accept != nil && !accept(idx) {
			return false
		}
		if fallback < 0 {
			fallback = slot
		}
		if l := load(idx); l < limit { // l+1 <= limit without overflow
			found = slot
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

// walk calls visit with the slot of each distinct member met clockwise
// from keyPoint's point, at most once per member, until visit returns true,
// every member has been visited, or one full turn is done.
func (r *hashRing) walk(keyPoint uint32, visit func(slot int32) bool) {
	n := r.Len()
	if n == 0 {
		return
	}
	c, k := r.locate(keyPoint)
	if c == len(r.chunks) {
		c, k = 0, 0
	}
	// First candidate: the common case, with no bookkeeping.
	last := int32(uint32(r.chunkAt(c)[k]))
	members := len(r.slots)
	if visit(last) || members == 1 {
		return
	}
	var small [16]uint64 // visited bitmap, enough for 1024 slots
	var seen []uint64
	if words := (len(r.index) + 63) / 64; words <= len(small) {
		seen = small[:words]
	} else {
		seen = make([]uint64, words)
	}
	seen[last/64] |= 1 << (last % 64)
	visited := 1
	for range n - 1 {
		if k++; k == len(r.chunkAt(c)) {
			c, k = c+1, 0
			if c == len(r.chunks) {
				c = 0
			}
		}
		o := int32(uint32(r.chunkAt(c)[k]))
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
