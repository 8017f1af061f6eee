package member

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"dubbo.apache.org/dubbo-go/v3/protocol/base"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dubbogo-lb/lb/loadbalance/internal/lbtest"
)

// providers returns n distinct invokers.
func providers(n int) []base.Invoker {
	l := make([]base.Invoker, n)
	for i := range l {
		l[i] = lbtest.Provider(20000+i, nil)
	}
	return l
}

// The index answers as a map filled in list order would, duplicates
// included (last slot wins), for providers in the list and outside it.
func TestIndexAnswersAsAMap(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	outside := providers(50)
	for _, n := range []int{0, 1, 2, 3, 7, 64, 1000} {
		pool := providers(n)
		list := make([]base.Invoker, n)
		for i := range list {
			list[i] = pool[i]
			if i > 0 && r.IntN(8) == 0 {
				list[i] = list[r.IntN(i)] // a duplicate
			}
		}
		want := make(map[base.Invoker]int, n)
		for i, inv := range list {
			want[inv] = i
		}
		narrow := newIndex(list)
		require.Equal(t, n > 0, narrow.slots != nil, "n=%d: slots of 16 bits", n)
		// The table of a list of 65 535 providers and more, on this one.
		var wide index
		if n > 0 {
			wide.wide = make([]int32, len(narrow.slots))
			wide.dups = fill(wide.wide, list)
		}
		for _, x := range []index{narrow, wide} {
			for _, inv := range append(append([]base.Invoker(nil), pool...), outside...) {
				i, ok := x.find(list, inv)
				j, inMap := want[inv]
				assert.Equal(t, inMap, ok, "n=%d", n)
				assert.Equal(t, j, i, "n=%d", n)
			}
		}
	}
}

// follow pairs each provider of a new list with the slot find gives it in
// the old one, whether the old list holds a provider twice (find's last
// slot, not the walk's) or not, and whether the new list keeps the old
// order or not.
func TestFollowPairsAsFindDoes(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	pool := providers(300)
	for round := range 300 {
		n := r.IntN(200)
		old := append([]base.Invoker(nil), pool[:n]...)
		if round%2 == 1 && n > 1 {
			old[r.IntN(n)] = old[r.IntN(n)] // perhaps a duplicate
		}
		list := append([]base.Invoker(nil), old...)
		for range r.IntN(4) {
			if at := r.IntN(len(list) + 1); r.IntN(2) == 0 && at < len(list) {
				list = append(list[:at], list[at+1:]...)
			} else {
				list = append(list[:at], append([]base.Invoker{pool[200+r.IntN(100)]}, list[at:]...)...)
			}
		}
		if round%3 == 2 {
			r.Shuffle(len(list), func(i, j int) { list[i], list[j] = list[j], list[i] })
		}
		x := newIndex(old)
		want := map[int]int{}
		for i, inv := range list {
			if j, ok := x.find(old, inv); ok {
				want[i] = j
			}
		}
		got := map[int]int{}
		x.follow(old, list, func(i, j int) { got[i] = j })
		if !assert.Equal(t, want, got, "round %d", round) {
			return
		}
	}
}

var sinkSlot int

// BenchmarkIndex: making the index of n providers and finding one, against
// the map[base.Invoker]int it replaced.
func BenchmarkIndex(b *testing.B) {
	for _, n := range []int{100, 10000} {
		list := providers(n)
		b.Run(fmt.Sprintf("make/index/N=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = newIndex(list)
			}
		})
		b.Run(fmt.Sprintf("make/map/N=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				m := make(map[base.Invoker]int, n)
				for i, inv := range list {
					m[inv] = i
				}
			}
		})
		x := newIndex(list)
		m := make(map[base.Invoker]int, n)
		for i, inv := range list {
			m[inv] = i
		}
		b.Run(fmt.Sprintf("find/index/N=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				sinkSlot, _ = x.find(list, list[i%n])
			}
		})
		b.Run(fmt.Sprintf("find/map/N=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				sinkSlot = m[list[i%n]]
			}
		})
	}
}
