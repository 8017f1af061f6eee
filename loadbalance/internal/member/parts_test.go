package member

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"dubbo.apache.org/dubbo-go/v3/protocol/base"
	"github.com/stretchr/testify/require"

	"github.com/dubbogo-lb/lb/loadbalance/internal/lbtest"
	"github.com/dubbogo-lb/lb/rpcstatus"
	"github.com/dubbogo-lb/lb/warmup"
)

// record is what a layout should hold of one provider.
type record struct {
	provider *rpcstatus.Provider
	meta     *warmup.Meta
	zone     string
}

// layoutChain makes the layouts of successive lists as newMembers does.
type layoutChain struct {
	r     *rand.Rand
	recs  map[base.Invoker]record
	list  []base.Invoker
	l     *layout
	reads int // newcomers read by the last layout
}

func (c *layoutChain) next(list []base.Invoker) {
	from := make([]int32, len(list))
	last := map[base.Invoker]int{}
	for j, inv := range c.list {
		last[inv] = j // the last slot, as the index gives
	}
	for i, inv := range list {
		from[i] = -1
		if j, ok := last[inv]; ok {
			from[i] = int32(j)
		}
	}
	c.reads = 0
	c.l = newLayout(list, partSize, c.l, from, func(i int) (*rpcstatus.Provider, *warmup.Meta, string) {
		c.reads++
		rec := record{provider: new(rpcstatus.Provider), meta: &warmup.Meta{Weight: float64(c.r.IntN(100))}}
		if c.r.IntN(4) == 0 {
			rec.zone = fmt.Sprint("az-", c.r.IntN(3))
		}
		c.recs[list[i]] = rec
		return rec.provider, rec.meta, rec.zone
	})
	c.list = list
}

// check asserts that c's layout holds each provider's record at its
// position and that its parts have the sizes the layout keeps.
func (c *layoutChain) check(t *testing.T, what string) {
	t.Helper()
	l := c.l
	require.Equal(t, len(c.list), l.len(), what)
	zoned := false
	for i, inv := range c.list {
		rec := c.recs[inv]
		if got := (record{l.provider(i), l.meta(i), l.zone(i)}); got != rec {
			require.Failf(t, "wrong record", "%s: provider %d: %+v, want %+v", what, i, got, rec)
		}
		zoned = zoned || rec.zone != ""
	}
	require.Equal(t, zoned, l.zoned, what)
	for k, p := range l.parts {
		size := int(l.starts[k+1] - l.starts[k])
		require.Equal(t, size, len(p.providers), what)
		require.LessOrEqual(t, size, partMax, "%s: part %d of %d", what, k, len(l.parts))
		if k < len(l.parts)-1 {
			require.GreaterOrEqual(t, size, partMin, "%s: part %d of %d", what, k, len(l.parts))
		}
	}
}

// made returns how many parts of l, and how many providers in them, were
// made for it rather than taken from old.
func made(l, old *layout) (parts, providers int) {
	for _, p := range l.parts {
		if old == nil || !slices.Contains(old.parts, p) {
			parts++
			providers += len(p.providers)
		}
	}
	return parts, providers
}

// A layout holds each provider's record, taken from the layout before for
// a provider that stays and read once for one that came, through changes
// of every kind; its parts stay between partMin and partMax providers.
func TestLayoutHoldsWhatEachProviderHad(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	joined := 0
	take := func(k int) []base.Invoker { // k providers that never joined
		l := make([]base.Invoker, k)
		for i := range l {
			l[i] = lbtest.Provider(20000+joined, nil)
			joined++
		}
		return l
	}
	c := &layoutChain{r: r, recs: map[base.Invoker]record{}}
	c.next(take(3000))
	c.check(t, "first")
	for round := range 200 {
		list := slices.Clone(c.list)
		var what string
		switch kind := r.IntN(6); {
		case kind == 0 && len(list) > 0: // one left, one came elsewhere
			i := r.IntN(len(list))
			list = slices.Delete(list, i, i+1)
			at := r.IntN(len(list) + 1)
			list = slices.Insert(list, at, take(1)...)
			what = "one"
		case kind == 1: // a few came and left
			for range r.IntN(20) {
				if len(list) > 0 && r.IntN(2) == 0 {
					i := r.IntN(len(list))
					list = slices.Delete(list, i, min(len(list), i+1+r.IntN(300)))
				} else {
					at := r.IntN(len(list) + 1)
					list = slices.Insert(list, at, take(1+r.IntN(600))...)
				}
			}
			what = "several"
		case kind == 2: // another order
			r.Shuffle(len(list), func(i, j int) { list[i], list[j] = list[j], list[i] })
			what = "shuffled"
		case kind == 3 && len(list) > 1: // a duplicate
			list = slices.Insert(list, r.IntN(len(list)), list[r.IntN(len(list))])
			what = "duplicate"
		case kind == 4: // the list shrinks or empties
			list = list[:r.IntN(len(list)+1)]
			what = "shrunk"
		default:
			list = append(list, take(r.IntN(700))...)
			what = "grown"
		}
		if len(list) == 0 {
			list = take(1 + r.IntN(3000))
		}
		came := 0
		for _, inv := range list {
			if _, ok := c.recs[inv]; !ok {
				came++
			}
		}
		c.next(list)
		what = fmt.Sprintf("round %d, %s, %d providers", round, what, len(list))
		c.check(t, what)
		require.Equal(t, came, c.reads, "%s: read once, when it came", what)
	}
}

// A one-provider change makes again the parts where one left and one
// came, and at times a short one's neighbor, and shares the others,
// wherever the change falls: at most 3 parts and 3 partMax providers, 2
// partSize on average. In another order every part is made again.
func TestLayoutSharesWhatAChangeLeavesWhole(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{100, 1000, 10000} {
		rounds := 3_000_000 / (n + 1000) // about the same time at each size
		pool := providers(n + rounds)
		c := &layoutChain{r: r, recs: map[base.Invoker]record{}}
		c.next(pool[:n])
		fresh, copied := n, 0
		for round := range rounds {
			list := slices.Clone(c.list)
			i := r.IntN(len(list))
			list = slices.Delete(list, i, i+1)
			list = slices.Insert(list, r.IntN(len(list)+1), pool[fresh])
			fresh++
			old := c.l
			c.next(list)
			what := fmt.Sprint(n, " providers, round ", round)
			c.check(t, what)
			parts, providers := made(c.l, old)
			require.LessOrEqual(t, parts, 3, what)
			require.LessOrEqual(t, providers, 3*partMax, what)
			copied += providers
		}
		require.LessOrEqual(t, copied/rounds, min(n, 2*partSize), "%d providers: copied on average", n)
		t.Logf("%d providers: %d parts, %d providers made again a change on average", n, len(c.l.parts), copied/rounds)
		shuffled := slices.Clone(c.list)
		r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		old := c.l
		c.next(shuffled)
		c.check(t, "shuffled")
		parts, _ := made(c.l, old)
		require.Equal(t, len(c.l.parts), parts, "%d providers, shuffled", n)
	}
}
