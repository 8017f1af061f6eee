package skeleton

import (
	"slices"
	"strings"
	"testing"

	"dubbo.apache.org/dubbo-go/v3/protocol/base"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dubbogo-lb/lb/loadbalance/internal/lbtest"
	"github.com/dubbogo-lb/lb/loadbalance/internal/member"
	"github.com/dubbogo-lb/lb/rpcstatus"
)

// seventh is the smallest balancer: always the first slot. It shows what a
// new balancer writes: a Spec.
func seventh(uncounted string, among bool) (*Balancer[struct{}], *int) {
	builds := 0
	spec := Spec[struct{}]{
		Name:      "first",
		Build:     func(*member.Set, *member.View[struct{}]) *struct{} { builds++; return &struct{}{} },
		Pick:      func(*member.View[struct{}], base.Invocation) int { return 0 },
		Uncounted: uncounted,
	}
	if among {
		spec.Among = func(_ *member.View[struct{}], list []base.Invoker, _ base.Invocation) base.Invoker {
			return list[len(list)-1]
		}
	}
	return New(spec), &builds
}

func TestSelectPrologueAndSubset(t *testing.T) {
	b, builds := seventh("", true)
	inv := lbtest.Call("Say")
	assert.Nil(t, b.Select(nil, inv))
	one := lbtest.N(1)
	assert.Same(t, one[0], b.Select(one, inv))
	assert.Zero(t, *builds, "no snapshot for 0 or 1 provider")

	list := lbtest.N(4)
	assert.Same(t, list[0], b.Select(slices.Clone(list), inv))
	sub := []base.Invoker{list[1], list[2]}
	assert.Same(t, list[2], b.Select(sub, inv), "the balancer's own pick among a subset")
	assert.Equal(t, 1, *builds)

	// Without Among: weighted random within the subset.
	d, _ := seventh("", false)
	d.Select(list, inv)
	for range 10 {
		assert.Contains(t, sub, d.Select(sub, inv))
	}
}

// The missing-filter hint is one WARN line per (service, method), with the
// module's prefix and no stack, and only for balancers that need the filter.
func TestMissingFilterOneLinePerMethod(t *testing.T) {
	logs := lbtest.CaptureLogs(t)
	b, _ := seventh("it picks blind", false)
	list := lbtest.N(3)
	for range member.MissingFilterPicks - 1 {
		b.Select(list, lbtest.Call("Say"))
	}
	assert.False(t, b.FilterMissing())
	assert.Empty(t, logs())
	b.Select(list, lbtest.Call("Say"))
	assert.True(t, b.FilterMissing())
	require.Len(t, logs(), 1)
	line := logs()[0]
	for _, want := range []string{"[dubbogo-lb] ", `"first"`, lbtest.Service, "Say", "it picks blind", "lbactive", "dubbo.consumer.filter"} {
		assert.Contains(t, line, want)
	}
	assert.False(t, strings.ContainsAny(line, "\r\n"))

	for range 3 * member.MissingFilterPicks {
		b.Select(list, lbtest.Call("Say"))
		b.Select(list, lbtest.Call("Other"))
	}
	assert.Len(t, logs(), 2, "once more for the other method, never again for Say")

	// A balancer that needs no filter is quiet where ejection is off, and
	// says that ejection sees nothing where it is on.
	quiet, _ := seventh("", false)
	off := lbtest.EjectionOff(lbtest.N(3)...)
	for range 2 * member.MissingFilterPicks {
		quiet.Select(off, lbtest.Call("Say"))
	}
	assert.False(t, quiet.FilterMissing())
	assert.Len(t, logs(), 2)
	for range member.MissingFilterPicks {
		quiet.Select(lbtest.N(3), lbtest.Call("Say"))
	}
	assert.True(t, quiet.FilterMissing())
	require.Len(t, logs(), 3)
	assert.Contains(t, logs()[2], "outlier ejection sees no failure")
	assert.NotContains(t, logs()[2], "picks blind")
}

// Every pick is counted once on the picked provider's statistics, on a
// retry's subset too, and not at all with detailed figures off; 0 or 1
// provider is no pick (dubbo-go does not even call Select for one).
func TestSelectCountsPicks(t *testing.T) {
	b, _ := seventh("", true)
	list := lbtest.N(3)
	picks := func() []int64 {
		var out []int64
		for _, inv := range list {
			out = append(out, rpcstatus.Of(inv.GetURL()).Method("Say").Picks())
		}
		return out
	}
	inv := lbtest.Call("Say")
	for range 5 {
		b.Select(list, inv)
	}
	b.Select([]base.Invoker{list[0], list[1]}, inv) // Among: the last
	b.Select(list[:1], inv)
	assert.Equal(t, []int64{5, 1, 0}, picks())

	rpcstatus.SetDetailed(false)
	t.Cleanup(func() { rpcstatus.SetDetailed(true) })
	b.Select(list, inv)
	assert.Equal(t, []int64{5, 1, 0}, picks())
}
