package urlmap

import (
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNamesGetCreatesOnceAndRanges(t *testing.T) {
	var x Names[value]
	a, _ := x.Get("a", 1)
	a.n = 7
	again, _ := x.Get("a", 1)
	assert.Same(t, a, again)
	b, _ := x.Get("b", 1)
	assert.NotSame(t, a, b)
	seen := map[string]int{}
	x.Range(func(name string, v *value) bool { seen[name] = v.n; return true })
	assert.Equal(t, map[string]int{"a": 7, "b": 0}, seen)
	n := 0
	x.Range(func(string, *value) bool { n++; return false })
	assert.Equal(t, 1, n, "Range stops when f returns false")
	assert.Equal(t, 2, x.Len())
}

// A name past the limit shares the Overflow value, and only the first
// such name is reported.
func TestNamesLimitSharesOverflow(t *testing.T) {
	x := Names[value]{Limit: 3}
	for i := range 3 {
		_, first := x.Get(strconv.Itoa(i), 0)
		require.False(t, first)
	}
	o1, first := x.Get("x", 0)
	assert.True(t, first, "the first name past the limit is reported")
	o2, again := x.Get("y", 0)
	assert.False(t, again, "only once")
	assert.Same(t, o1, o2)
	o3, _ := x.Get(Overflow, 0)
	assert.Same(t, o1, o3)
	assert.Equal(t, 3, x.Len())
	own, _ := x.Get("1", 0)
	assert.NotSame(t, o1, own, "names within the limit keep their own value")
}

// Sweep takes out what was not stamped since, keeps what was, and a
// released value is never handed out again.
func TestNamesSweepReleasesIdle(t *testing.T) {
	x := Names[value]{Limit: 2}
	idle, _ := x.Get("idle", 1)
	used, _ := x.Get("used", 1)
	x.Get("used", 5)
	out, left := x.Sweep(5, nil, false)
	assert.Equal(t, [2]int{1, 1}, [2]int{out, left})
	assert.True(t, Released(idle))
	assert.False(t, Released(used))
	again, _ := x.Get("used", 5)
	assert.Same(t, used, again)
	fresh, first := x.Get("idle", 6)
	assert.NotSame(t, idle, fresh)
	assert.False(t, first, "a released name frees its place under the limit")
	assert.Equal(t, 2, x.Len())
}

// Stamps only move forward: an older reading does not make a value look
// idle.
func TestNamesStampsOnlyMoveForward(t *testing.T) {
	var x Names[value]
	v, _ := x.Get("a", 10)
	x.Get("a", 3)
	out, _ := x.Sweep(10, nil, false)
	assert.Zero(t, out)
	assert.False(t, Released(v))
}

func TestNamesConcurrentGetAndSweep(t *testing.T) {
	x := Names[value]{Limit: 8}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 2000 {
				x.Get(strconv.Itoa((g*7+i)%16), int64(i))
			}
		})
	}
	wg.Go(func() {
		for i := range 200 {
			x.Sweep(int64(i*10), nil, false)
		}
	})
	wg.Wait()
	assert.LessOrEqual(t, x.Len(), 8)
}

func TestNamesGetOfAKnownNameDoesNotAllocate(t *testing.T) {
	var x Names[value]
	name := string([]byte("Method"))
	x.Get(name, 1)
	assert.Zero(t, testing.AllocsPerRun(100, func() { x.Get(name, 2) }))
}

// Adding names costs the same whatever their number: nothing is copied.
func BenchmarkNamesAdd(b *testing.B) {
	for _, n := range []int{1_000, 20_000} {
		names := make([]string, n)
		for i := range names {
			names[i] = "method" + strconv.Itoa(i)
		}
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			for b.Loop() {
				x := Names[value]{Limit: n}
				for _, s := range names {
					x.Get(s, 1)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/name")
		})
	}
}

func BenchmarkNamesGet(b *testing.B) {
	var x Names[value]
	name := string([]byte("Method"))
	x.Get(name, 1)
	for b.Loop() {
		x.Get(name, 1)
	}
}

// keep vetoes a release, and a Sweep asked to close an empty Names makes
// every later Get fail, so that no value is added to a dropped Names.
func TestNamesSweepKeepAndClose(t *testing.T) {
	var x Names[value]
	busy, _ := x.Get("busy", 1)
	busy.n = 1
	x.Get("idle", 1)
	out, left := x.Sweep(2, func(_ string, v *value) bool { return v.n > 0 }, true)
	assert.Equal(t, [2]int{1, 1}, [2]int{out, left})
	assert.False(t, x.Closed(), "not empty")
	busy.n = 0
	x.Sweep(2, func(_ string, v *value) bool { return v.n > 0 }, true)
	assert.True(t, x.Closed())
	v, _ := x.Get("new", 3)
	assert.Nil(t, v)
}

func TestNamesTouchForgetAndNameOf(t *testing.T) {
	x := Names[value]{Limit: 1}
	a, _ := x.Get("a", 1)
	o, _ := x.Get("b", 1)
	assert.Equal(t, "a", NameOf(a))
	assert.Equal(t, Overflow, NameOf(o))
	assert.True(t, Touch(a, 9))
	out, _ := x.Sweep(9, nil, false)
	assert.Equal(t, 1, out, "the overflow value, stamped 1, goes; a, touched at 9, stays")
	x.Forget("a", a)
	assert.False(t, Touch(a, 10), "forgotten")
	assert.Zero(t, x.Len())
}
