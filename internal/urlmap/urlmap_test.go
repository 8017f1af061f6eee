package urlmap

import (
	"runtime"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type key struct{ _ [16]byte }

type value struct{ n int }

func TestStoreLookupAndIdentity(t *testing.T) {
	var s Store[key, value]
	a, b := new(key), new(key)
	assert.Nil(t, s.Load(a))
	pa := s.Get(a)
	require.NotNil(t, pa)
	assert.Same(t, pa, s.Get(a))
	assert.Same(t, pa, s.Load(a))
	assert.NotSame(t, pa, s.Get(b))
	assert.Equal(t, 2, s.Len())
	runtime.KeepAlive(a)
	runtime.KeepAlive(b)
}

func TestStoreConcurrentGetCreatesOnce(t *testing.T) {
	var s Store[key, value]
	k := new(key)
	got := make([]*value, 8)
	var wg sync.WaitGroup
	for i := range got {
		wg.Go(func() { got[i] = s.Get(k) })
	}
	wg.Wait()
	for _, p := range got {
		assert.Same(t, got[0], p)
	}
	runtime.KeepAlive(k)
}

// Providers that come and go must not make the store grow without bound.
func TestStoreReleasesDepartedProviders(t *testing.T) {
	var s Store[key, value]
	const total, batch = 100_000, 1_000
	peak := 0
	for done := 0; done < total; done += batch {
		keys := make([]*key, batch)
		for i := range keys {
			keys[i] = new(key)
			s.Get(keys[i]).n++
		}
		peak = max(peak, s.Len())
		keys = nil
		runtime.GC()
	}
	// Cleanups run on their own goroutine after a collection, ~99 000 of
	// them here, at the pace a busy machine gives that goroutine: go on
	// while they make progress, give up after 100 chances without any.
	for stalled, last := 0, s.Len(); stalled < 100 && s.Len() > batch; {
		runtime.GC()
		runtime.Gosched()
		if n := s.Len(); n < last {
			stalled, last = 0, n
		} else {
			stalled++
		}
	}
	assert.Less(t, peak, total/4, "store grew with churn")
	assert.LessOrEqual(t, s.Len(), batch, "departed providers still held")
}
