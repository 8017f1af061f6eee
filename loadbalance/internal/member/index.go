package member

import (
	"hash/maphash"
	"math"
	"math/bits"

	"dubbo.apache.org/dubbo-go/v3/protocol/base"

	"github.com/dubbogo-lb/lb/loadbalance/internal/algo"
)

// index finds a provider's slot in a Set: an open-addressing table of
// slot+1 (0: empty) with linear probing, at most two-thirds full, of 16-bit
// slots below 65 535 providers. Immutable once made.
type index struct {
	slots []uint16 // for lists of fewer than 1<<16 - 1 providers
	wide  []int32  // for longer lists
	dups  bool     // some invoker is listed twice
}

var indexSeed = maphash.MakeSeed()

// newIndex returns the index of invokers. An invoker listed twice is found
// at its last slot, as a map filled in order would say.
func newIndex(invokers []base.Invoker) index {
	if len(invokers) == 0 {
		return index{}
	}
	size := 1 << bits.Len(uint(len(invokers)+len(invokers)/2))
	var x index
	if len(invokers) < math.MaxUint16 {
		x.slots = make([]uint16, size)
		x.dups = fill(x.slots, invokers)
	} else {
		x.wide = make([]int32, size)
		x.dups = fill(x.wide, invokers)
	}
	return x
}

// fill places each invoker's slot+1 in slots, an empty table of a power
// of two entries, and reports whether some invoker is listed twice.
func fill[T uint16 | int32](slots []T, invokers []base.Invoker) (dups bool) {
	mask := uint64(len(slots) - 1)
	for i, inv := range invokers {
		h := maphash.Comparable(indexSeed, inv) & mask
		for slots[h] != 0 {
			if invokers[slots[h]-1] == inv {
				dups = true
				break
			}
			h = (h + 1) & mask
		}
		slots[h] = T(i + 1)
	}
	return dups
}

// find returns the slot of inv in invokers, the list x was made from.
func (x index) find(invokers []base.Invoker, inv base.Invoker) (int, bool) {
	if x.wide != nil {
		return lookup(x.wide, invokers, inv)
	}
	return lookup(x.slots, invokers, inv)
}

// lookup returns the slot of inv in invokers by the table slots (fill).
func lookup[T uint16 | int32](slots []T, invokers []base.Invoker, inv base.Invoker) (int, bool) {
	if len(slots) == 0 {
		return 0, false
	}
	mask := uint64(len(slots) - 1)
	for h := maphash.Comparable(indexSeed, inv) & mask; slots[h] != 0; h = (h + 1) & mask {
		if i := int(slots[h] - 1); invokers[i] == inv {
			return i, true
		}
	}
	return 0, false
}

// follow calls f(i, j) for each provider i of list at slot j of invokers,
// the list x was made from (algo.Match, unless invokers has duplicates).
func (x index) follow(invokers, list []base.Invoker, f func(i, j int)) {
	find := func(inv base.Invoker) (int, bool) { return x.find(invokers, inv) }
	if x.dups {
		for i, inv := range list {
			if j, ok := find(inv); ok {
				f(i, j)
			}
		}
		return
	}
	algo.Match(list, invokers, find, f)
}

// Carry calls f(i, j) for every provider i of s that was slot j of prev,
// the snapshot s replaces (nil: none), to carry state over.
func Carry[T any](s *Set, prev *View[T], f func(i, j int)) {
	if prev == nil {
		return
	}
	prev.index.follow(prev.Invokers, s.Invokers, f)
}
