package simulate_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"dubbo.apache.org/dubbo-go/v3/common"
	"dubbo.apache.org/dubbo-go/v3/protocol/base"
	"dubbo.apache.org/dubbo-go/v3/protocol/invocation"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dubbogo-lb/lb/internal/assembly/simulate"
	"github.com/dubbogo-lb/lb/rpcstatus"
)

const ms = int64(time.Millisecond)

// provider is a provider of the test service on 127.0.0.1:port.
func provider(port int, _ map[string]string) base.Invoker {
	u, err := common.NewURL(fmt.Sprintf("tri://127.0.0.1:%d/greet.Greeter?interface=greet.Greeter", port))
	if err != nil {
		panic(err)
	}
	return base.NewBaseInvoker(u)
}

// roundRobin picks the providers of the list in turn.
type roundRobin struct{ n int }

func (r *roundRobin) Select(l []base.Invoker, _ base.Invocation) base.Invoker {
	if len(l) == 0 {
		return nil
	}
	r.n++
	return l[r.n%len(l)]
}

// fixed is a provider whose calls all take d ns.
func fixed(d int64) simulate.Server {
	return simulate.Model{Latency: simulate.Constant(time.Duration(d))}.Server()
}

// One closed-loop caller on a 2 ms provider: a call every 2 ms of virtual
// time, recorded by the real filter at those times; Stop ends the call in
// flight as failed. A run carries on where the previous one stopped.
func TestClosedLoopOnVirtualTime(t *testing.T) {
	var picks, done []int64
	s := simulate.New(simulate.Options{
		OnPick: func(_ int, now int64) { picks = append(picks, now) },
		OnDone: func(_ int, start, end int64, failed bool) {
			assert.Equal(t, 2*ms, end-start)
			assert.False(t, failed)
			done = append(done, end)
		},
	})
	s.LB = &roundRobin{}
	s.List = []base.Invoker{s.Add(provider(21000, nil).GetURL(), fixed(2*ms))}
	s.Callers(1)
	s.Run(simulate.Origin + 500*ms)
	assert.Equal(t, simulate.Origin+500*ms, s.Now())
	s.Run(simulate.Origin + 1000*ms)
	require.Len(t, done, 499, "completions at 2, 4, …, 998 ms")
	assert.Equal(t, simulate.Origin+998*ms, done[498])
	assert.Len(t, picks, 500)
	s.Stop()
	st := rpcstatus.Of(s.Provider(0).GetURL()).Method("SayHello")
	assert.EqualValues(t, 500, st.Total(), "the lbactive filter saw every call")
	assert.EqualValues(t, 1, st.Failed(), "the call cut by Stop")
	assert.EqualValues(t, 0, st.Active())
	assert.Equal(t, time.Duration(500*2*ms), st.TotalElapsed(), "the filter measured virtual time")
	s.Run(simulate.Origin + 2000*ms) // nothing after Stop
	assert.Len(t, done, 499)
}

// Open-loop arrivals keep coming whatever the providers do: 1000/s on a
// provider that takes 1 s keeps 1000 calls in flight. Actions scheduled
// with At run between callers, in time order.
func TestOpenLoopAndActions(t *testing.T) {
	var picks [2]int
	s := simulate.New(simulate.Options{OnPick: func(p int, _ int64) { picks[p]++ }})
	s.LB = &roundRobin{}
	slow := s.Add(provider(21001, nil).GetURL(), fixed(1000*ms))
	other := s.Add(provider(21002, nil).GetURL(), fixed(ms))
	s.List = []base.Invoker{slow}
	s.At(simulate.Origin+1500*ms, func() { s.List = []base.Invoker{other} })
	s.Arrivals(1000)
	s.Run(simulate.Origin + 1500*ms)
	assert.Equal(t, [2]int{1500, 0}, picks)
	assert.EqualValues(t, 1000, rpcstatus.Of(slow.GetURL()).Method("SayHello").Active())
	s.Arrivals(2000) // a new rate
	s.Run(simulate.Origin + 2000*ms)
	assert.InDelta(t, 1000, picks[1], 1)
	s.Stop()
	assert.EqualValues(t, 0, rpcstatus.Of(slow.GetURL()).Method("SayHello").Active())
}

type badLB struct{ panics bool }

func (b badLB) Select([]base.Invoker, base.Invocation) base.Invoker {
	if b.panics {
		panic("boom")
	}
	return provider(21003, nil) // not one of the Sim's
}

// A Select that panics or returns a stranger is reported and the caller
// backs off for a millisecond.
func TestMisbehavingBalancer(t *testing.T) {
	var panics, unrouted int
	s := simulate.New(simulate.Options{
		OnPanic:    func(v any, _ int64) { assert.Equal(t, "boom", v); panics++ },
		OnUnrouted: func(base.Invoker, int64) { unrouted++ },
	})
	s.List = []base.Invoker{s.Add(provider(21004, nil).GetURL(), fixed(ms))}
	s.LB = badLB{panics: true}
	s.Callers(2)
	s.Run(simulate.Origin + 100*ms)
	s.LB = badLB{}
	s.Run(simulate.Origin + 200*ms)
	s.Stop()
	assert.Equal(t, 200, panics)
	assert.Equal(t, 200, unrouted)
}

func TestProviderOutsideSimulation(t *testing.T) {
	s := simulate.New(simulate.Options{})
	p := s.Add(provider(21005, nil).GetURL(), fixed(ms))
	res := p.Invoke(context.Background(), invocation.NewRPCInvocation("SayHello", nil, nil))
	assert.ErrorIs(t, res.Error(), simulate.ErrNotSimulated)
	i, ok := s.Index(p)
	assert.True(t, ok)
	assert.Zero(t, i)
	_, ok = s.Index(provider(21005, nil))
	assert.False(t, ok)
}
