package member

import (
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"dubbo.apache.org/dubbo-go/v3/common"
	"dubbo.apache.org/dubbo-go/v3/protocol/base"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dubbogo-lb/lb/internal/lblog"
	"github.com/dubbogo-lb/lb/internal/urlmap"
	"github.com/dubbogo-lb/lb/loadbalance/internal/lbtest"
	"github.com/dubbogo-lb/lb/rpcstatus"
	"github.com/dubbogo-lb/lb/warmup"
)

// A (service, method) without a call for a whole epoch of the idle time is
// released, its snapshot and its hold on the providers' statistics with it;
// one still called is kept, and so is its service.
func TestIdleStatesAreReleased(t *testing.T) {
	clock := lbtest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	r := NewRegistry(warmup.Options{}, clock.Now, func(*Set, *View[table]) *table { return &table{} })
	r.idle = int64(time.Minute)
	list := lbtest.N(3)
	other := otherService(30000, 2)
	idle, _ := r.Find(list, "Idle")
	kept, _ := r.Find(list, "Kept")
	_, _ = r.Find(other, "Gone")
	require.Equal(t, 3, r.States())

	clock.Advance(70 * time.Second) // the first epoch ends at the next build
	_, _ = r.Find(list, "Kept")
	_, _ = r.Find(list, "New") // builds: epoch 0 ends, nothing idle for a whole epoch yet
	assert.Equal(t, 4, r.States())

	clock.Advance(70 * time.Second)
	again, _ := r.Find(list, "Kept")
	assert.Same(t, kept, again, "a method still called keeps its snapshot")
	views := 0
	r.Range(func(*View[table]) { views++ }) // inspection sweeps
	assert.Equal(t, 1, r.States(), "Idle, New (last called 70 s ago) and the other service's Gone are released; Kept stays")
	assert.Equal(t, 1, views, "released states leave the inspection")
	r.mu.Lock()
	_, otherKept := r.services[other[0].GetURL().ServiceKey()]
	r.mu.Unlock()
	assert.False(t, otherKept, "a service whose methods are all released goes")

	v, _ := r.Find(list, "Idle")
	assert.NotSame(t, idle, v, "a released method starts afresh")
	assert.Equal(t, 2, r.States())
}

// otherService returns n providers of a service of their own, from port.
func otherService(port, n int) []base.Invoker {
	out := make([]base.Invoker, n)
	for i := range out {
		u, err := common.NewURL("tri://127.0.0.1:" + strconv.Itoa(port+i) + "/org.example.Other" + strconv.Itoa(port) + "?interface=org.example.Other" + strconv.Itoa(port))
		if err != nil {
			panic(err)
		}
		out[i] = base.NewBaseInvoker(u)
	}
	return out
}

// The statistics a released snapshot held go once nothing else holds them.
func TestReleasedStatesLetGoOfStatistics(t *testing.T) {
	clock := lbtest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	r := NewRegistry(warmup.Options{}, clock.Now, func(*Set, *View[table]) *table { return &table{} })
	r.idle = int64(time.Minute)
	list := otherService(31000, 2)
	_, _ = r.Lookup(list, "Gone")
	p := rpcstatus.Of(list[0].GetURL())
	p.Release(int64(time.Hour)) // rpcstatus's own hold, as the filter's sweep lets go of it
	require.Equal(t, 1, p.MethodCount())
	clock.Advance(61 * time.Second)
	r.Range(func(*View[table]) {})
	clock.Advance(61 * time.Second)
	r.Range(func(*View[table]) {})
	require.Zero(t, r.States())
	for i := 0; i < 100 && p.MethodCount() > 0; i++ {
		runtime.GC()
		runtime.Gosched()
	}
	assert.Zero(t, p.MethodCount(), "no snapshot holds the method's statistics any more")
}

// Past the method limit, new names share the overflow state, built for
// urlmap.Overflow, and one WARN per service says so.
func TestMethodsBeyondTheLimitShareTheOverflowState(t *testing.T) {
	var lines []string
	defer lblog.Capture(func(l string) { lines = append(lines, l) })()
	r := NewRegistry(warmup.Options{}, nil, func(*Set, *View[table]) *table { return &table{} })
	list := otherService(32000, 2)
	for i := range DefaultMethodLimit {
		v, _ := r.Lookup(list, "m"+strconv.Itoa(i))
		require.Equal(t, "m"+strconv.Itoa(i), v.Method)
	}
	assert.Empty(t, lines)
	v257, _ := r.Lookup(list, "m256")
	v258, _ := r.Lookup(list, "m257")
	assert.Equal(t, urlmap.Overflow, v257.Method)
	assert.Same(t, v257, v258, "one shared state")
	assert.Equal(t, DefaultMethodLimit+1, r.States())
	require.Len(t, lines, 1, "one WARN per service")
	assert.Contains(t, lines[0], list[0].GetURL().ServiceKey())
	assert.True(t, strings.Contains(lines[0], strconv.Itoa(DefaultMethodLimit)))
	own, _ := r.Lookup(list, "m0")
	assert.Equal(t, "m0", own.Method, "names within the limit keep their own")
}

// A steady call through a released state's hot entry finds a new state.
func TestHotEntryOfAReleasedStateIsNotUsed(t *testing.T) {
	clock := lbtest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	r := NewRegistry(warmup.Options{}, clock.Now, func(*Set, *View[table]) *table { return &table{} })
	r.idle = int64(time.Minute)
	list := lbtest.N(2)
	old, _ := r.Find(list, "Say")
	st := r.state(list[0].GetURL(), "Say")
	clock.Advance(61 * time.Second)
	r.Range(func(*View[table]) {})
	clock.Advance(61 * time.Second)
	r.Range(func(*View[table]) {})
	require.True(t, urlmap.Released(st))
	r.hot[hotSlot(list[0].GetURL(), "Say")].Store(&hotEntry[table]{url: list[0].GetURL(), method: "Say", st: st})
	assert.NotSame(t, st, r.state(list[0].GetURL(), "Say"))
	v, _ := r.Find([]base.Invoker{list[0], list[1]}, "Say")
	assert.NotSame(t, old, v)
}
