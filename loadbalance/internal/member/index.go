package member

import (
	"hash/maphash"
	"math/bits"

	"dubbo.apache.org/dubbo-go/v3/protocol/base"
)

// index finds a provider's slot in a Set. It is an open-addressing table
// with linear probing of slot+1 (0: empty), at most two-thirds full,
// hashed with maphash.Comparable: 6 to 12 bytes a provider and nothing for
// the garbage collector to scan, where the map[base.Invoker]int it replaced
// took about 44, more than any array of the Set. Immutable once made.
type index []int32

// indexSeed hashes every index of the process.
var indexSeed = maphash.MakeSeed()

// newIndex returns the index of invokers. An invoker listed twice is found
// at its last slot, as a map filled in order would say.
func newIndex(invokers []base.Invoker) index {
	if len(invokers) == 0 {
		return nil
	}
	x := make(index, 1<<bits.Len(uint(len(invokers)+len(invokers)/2)))
	mask := uint64(len(x) - 1)
	for i, inv := range invokers {
		h := maphash.Comparable(indexSeed, inv) & mask
		for x[h] != 0 && invokers[x[h]-1] != inv {
			h = (h + 1) & mask
		}
		x[h] = int32(i + 1)
	}
	return x
}

// find returns the slot of inv in invokers, the list x was made from.
func (x index) find(invokers []base.Invoker, inv base.Invoker) (int, bool) {
	if len(x) == 0 {
		return 0, false
	}
	mask := uint64(len(x) - 1)
	for h := maphash.Comparable(indexSeed, inv) & mask; x[h] != 0; h = (h + 1) & mask {
		if i := int(x[h] - 1); invokers[i] == inv {
			return i, true
		}
	}
	return 0, false
}
