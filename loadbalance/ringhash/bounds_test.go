package ringhash

import (
	"runtime"
	"strings"
	"testing"
	"time"
	"weak"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dubbogo-lb/lb/loadbalance/internal/lbtest"
	"github.com/dubbogo-lb/lb/loadbalance/internal/member"
	"github.com/dubbogo-lb/lb/loadbalance/lbenv"
)

// hash.arguments lists at most maxArguments indexes: the first are kept and
// one WARN says so.
func TestArgumentsAreCapped(t *testing.T) {
	warnings := captureWarnings(t)
	list := ports(21880, 3, map[string]string{"hash.arguments": "0,1,2,3,4,5,6,7,8,9,10"})
	lb := New(Options{})
	for i := range 20 {
		lb.Select(list, lbtest.Call("Say", key(i)))
	}
	v, _ := lb.sk.View(list, "Say")
	assert.Equal(t, []int{0, 1, 2, 3, 4, 5, 6, 7}, v.Table.key.indexes)
	capped := 0
	for _, w := range warnings() {
		if strings.Contains(w, "more than 8 argument indexes") {
			capped++
		}
	}
	assert.Equal(t, 1, capped)
}

// A ring whose providers × hash.nodes exceed maxPoints has fewer nodes per
// provider, and says so once, not at every change of membership.
func TestCappedRingIsReportedOnce(t *testing.T) {
	warnings := captureWarnings(t)
	lb := New(Options{})
	n := maxPoints/maxNodes + 2
	for _, size := range []int{n, n + 1, n + 2} {
		list := ports(22000, size, map[string]string{"hash.nodes": "1024"})
		lb.Select(list, lbtest.Call("Say", key(1)))
		lbtest.WaitBuilds(lb)
		v, _ := lb.sk.View(list, "Say")
		assert.LessOrEqual(t, v.Table.ring.nodes*size, maxPoints)
	}
	var capped int
	for _, w := range warnings() {
		if strings.Contains(w, "fewer virtual nodes") {
			capped++
		}
	}
	assert.Equal(t, 1, capped)
}

// Once the snapshots of a service are released for idleness, its shared
// ring goes with them.
func TestRingOfAReleasedServiceGoes(t *testing.T) {
	clock := lbtest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	lb := New(Options{Env: lbenv.Env{Wall: clock.Now}})
	list := ports(23000, 3, nil)
	lb.Select(list, lbtest.Call("Say", key(1)))
	lb.Select(list, lbtest.Call("Other", key(1)))
	say, _ := lb.sk.View(list, "Say")
	other, _ := lb.sk.View(list, "Other")
	require.Same(t, say.Table.ring, other.Table.ring, "the methods share one ring")
	ring := weak.Make(say.Table.ring)
	say, other = nil, nil
	clock.Advance(member.DefaultIdle + time.Second)
	lb.sk.Describe(0)
	clock.Advance(member.DefaultIdle + time.Second)
	lb.sk.Describe(0) // inspection sweeps
	for i := 0; i < 100 && ring.Value() != nil; i++ {
		runtime.GC()
		runtime.Gosched()
	}
	assert.Nil(t, ring.Value())
}
