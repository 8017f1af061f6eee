package algo

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestWorkLendsZeroedSlices(t *testing.T) {
	var w Work[int]
	s := w.Get(3)
	require.Equal(t, []int{0, 0, 0}, s)
	s[0], s[2] = 7, 9
	w.Put(s)
	// Whether or not the pool kept s, what comes back is zeroed.
	require.Equal(t, []int{0, 0}, w.Get(2))
	require.Equal(t, make([]int, 5), w.Get(5))
	require.Len(t, w.Get(maxPooled+1), maxPooled+1)
	w.Put(make([]int, 0, maxPooled+1)) // too large to keep: dropped
}
