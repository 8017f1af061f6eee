package member

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dubbogo-lb/lb/loadbalance/internal/lbtest"
	"github.com/dubbogo-lb/lb/warmup"
)

// A part keeps its value while it stays with the same warm weights; a
// part made again learns where each of its providers was.
func TestPartsKeepThePartsThatStayWithTheirWeights(t *testing.T) {
	start := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	clock := lbtest.NewClock(start.Add(60 * time.Second))
	r := NewRegistry(warmup.Options{}, clock.Now, func(*Set, *View[table]) *table { return &table{} })
	r.SetInlineUpTo(1 << 30)
	list := providers(1000)
	list[500] = lbtest.Started(29500, start, 600*time.Second) // warms up
	type value struct{ start, n int }
	made := 0
	build := func(start int, weights []float64, was Was[value]) *value {
		made++
		return &value{start, len(weights)}
	}
	v1, _ := r.Lookup(list, "Say")
	p1 := NewParts(v1.Set, nil, build)
	require.Equal(t, len(v1.layout.parts), p1.Len())
	require.Equal(t, p1.Len(), made)
	for k := range p1.Len() {
		val, s, e := p1.At(k)
		assert.Equal(t, value{s, e - s}, *val, "part %d", k)
		assert.Equal(t, v1.weights[k], p1.Weights(k))
	}

	// The warm weight moves: only the part that holds it is made again.
	clock.Advance(time.Second)
	v2, _ := r.Lookup(list, "Say")
	require.NotEqual(t, v1.Weight(500), v2.Weight(500))
	made = 0
	var seen []int
	p2 := NewParts(v2.Set, p1, func(start int, weights []float64, was Was[value]) *value {
		for o := range weights {
			old, j, ok := was(start + o)
			require.True(t, ok, "provider %d stayed", start+o)
			assert.Equal(t, start+o, old.start+j, "where provider %d was", start+o)
		}
		seen = append(seen, start)
		return build(start, weights, was)
	})
	require.Equal(t, 1, made)
	k, _ := v2.layout.locate(500)
	_, s, _ := p2.At(k)
	assert.Equal(t, []int{s}, seen)
	for j := range p2.Len() {
		a, _, _ := p1.At(j)
		b, _, _ := p2.At(j)
		assert.Equal(t, j != k, a == b, "part %d kept", j)
	}

	// One provider replaced at the end: the parts before it stay, and the
	// newcomer was nowhere.
	changed := append(slices.Clone(list[:999]), lbtest.Provider(29999, nil))
	v3, _ := r.Lookup(changed, "Say")
	made = 0
	NewParts(v3.Set, p2, func(start int, weights []float64, was Was[value]) *value {
		_, _, ok := was(999)
		if start+len(weights) == 1000 {
			assert.False(t, ok, "the newcomer")
		}
		return build(start, weights, was)
	})
	assert.LessOrEqual(t, made, 2)
}
