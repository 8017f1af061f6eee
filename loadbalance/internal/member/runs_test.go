package member

import (
	"slices"
	"testing"

	"dubbo.apache.org/dubbo-go/v3/protocol/base"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A table's runs keep, by pointer, the runs of the parts that stay, and
// fill the others; each provider finds its own value, before and after.
func TestRunsKeepThePartsThatStay(t *testing.T) {
	r, _ := newCounting()
	list := providers(1000)
	id := map[base.Invoker]int{}
	for i, inv := range list {
		id[inv] = i
	}
	fills, carried := 0, 0
	fill := func(s *Set) func(i int, was, v *int) {
		return func(i int, was, v *int) {
			fills++
			*v = id[s.Invokers[i]]
			if was != nil {
				assert.Equal(t, *v, *was, "provider %d: what it was", i)
				carried++
			}
		}
	}
	v1, _ := r.Lookup(list, "Say")
	runs1 := NewRuns(v1.Set, nil, fill(v1.Set))
	require.Equal(t, 1000, fills)

	changed := slices.Delete(slices.Clone(list), 300, 301)
	changed = append(changed, providers(1001)[1000])
	id[changed[999]] = 1000
	v2, _ := r.Lookup(changed, "Say")
	fills = 0
	runs2 := NewRuns(v2.Set, runs1, fill(v2.Set))
	for i, inv := range changed {
		require.Equal(t, id[inv], *runs2.At(i), "provider %d", i)
	}
	kept := 0
	for k, p := range v2.layout.parts {
		if j := slices.Index(v1.layout.parts, p); j >= 0 {
			assert.Same(t, &runs1.runs[j][0], &runs2.runs[k][0], "part %d", k)
			kept++
		}
	}
	assert.GreaterOrEqual(t, kept, len(v2.layout.parts)-3)
	assert.Equal(t, 1000-sizeOfKept(v2, v1), fills, "filled: the providers of the parts made again")
	assert.Equal(t, fills-1, carried, "carried: all but the newcomer")
}

// sizeOfKept returns how many providers of b are in parts that a holds.
func sizeOfKept(b, a *View[table]) int {
	n := 0
	for k, p := range b.layout.parts {
		if slices.Contains(a.layout.parts, p) {
			n += int(b.layout.starts[k+1] - b.layout.starts[k])
		}
	}
	return n
}
