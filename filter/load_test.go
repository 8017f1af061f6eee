package filter

import (
	"context"
	"net/http"
	"testing"

	"dubbo.apache.org/dubbo-go/v3/common/constant"
	"dubbo.apache.org/dubbo-go/v3/protocol/base"
	"dubbo.apache.org/dubbo-go/v3/protocol/invocation"
	"dubbo.apache.org/dubbo-go/v3/protocol/result"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dubbogo-lb/lb/rpcstatus"
	"github.com/dubbogo-lb/lb/rpcstatus/loadreport"
)

// trailerInvoker answers as dubbo-go's triple invoker does: it replaces
// the trailer header the invocation lends it with the response's trailers
// (canonical keys), and checks that the request asked.
type trailerInvoker struct {
	*fakeInvoker
	trailer http.Header
	asked   string
}

func (f *trailerInvoker) Invoke(_ context.Context, inv base.Invocation) result.Result {
	f.asked, _ = inv.GetAttachment(loadreport.AskKey)
	if v, ok := inv.GetAttribute(constant.ResponseTrailerKey); ok {
		if h, ok := v.(*http.Header); ok && h != nil {
			*h = f.trailer.Clone()
		}
	}
	return &result.RPCResult{}
}

func TestAsksAndStoresTripleTrailers(t *testing.T) {
	c := &clock{ns: 5e9}
	f := New(Options{Now: c.now})
	ivk := &trailerInvoker{fakeInvoker: newInvoker(t, map[string]string{"loadbalance": "loadaware", "at": "trailers"}, nil),
		trailer: http.Header{
			loadreport.TrailerJava: {"curTime:1764560000123,load:37.5"},
			loadreport.TrailerOwn:  {"cpu:0.25,inflight:3,cap:200,qps:100,eps:1,t:1764560000123"},
		}}
	inv := invocation.NewRPCInvocation("Say", nil, nil)
	f.Invoke(context.Background(), ivk, inv)
	assert.Equal(t, loadreport.AskValue, ivk.asked)
	l := rpcstatus.Of(ivk.GetURL()).Load()
	r := l.Report()
	assert.Equal(t, 37.5, r.JavaLoad)
	assert.Equal(t, 0.25, r.CPU)
	assert.Equal(t, 200.0, r.Capacity)
	assert.Equal(t, int64(5e9), l.At())
	u, ok := l.Utilization()
	assert.True(t, ok)
	assert.Equal(t, 0.25, u, "max(cpu, inflight/capacity)")
	v, _ := inv.GetAttribute(constant.ResponseTrailerKey)
	assert.Nil(t, v, "the lent header is taken back")

	// A report older than the one held is dropped (Java's rule).
	ivk.trailer = http.Header{loadreport.TrailerJava: {"curTime:1764560000000,load:99"}}
	f.Invoke(context.Background(), ivk, invocation.NewRPCInvocation("Say", nil, nil))
	assert.Equal(t, 37.5, l.Report().JavaLoad)
}

func TestKeepsTheCallersTrailerHeader(t *testing.T) {
	f := New(Options{})
	ivk := &trailerInvoker{fakeInvoker: newInvoker(t, map[string]string{"lb.load-report": "true", "at": "own"}, nil),
		trailer: http.Header{loadreport.TrailerJava: {"curTime:1764560000123,load:12.5"}}}
	mine := new(http.Header)
	inv := invocation.NewRPCInvocation("Say", nil, nil)
	inv.SetAttribute(constant.ResponseTrailerKey, mine)
	f.Invoke(context.Background(), ivk, inv)
	assert.Equal(t, "curTime:1764560000123,load:12.5", mine.Get(loadreport.JavaKey), "the caller's header gets the trailers")
	assert.Equal(t, 12.5, rpcstatus.Of(ivk.GetURL()).Load().Report().JavaLoad)
}

func TestReadsResultAttachments(t *testing.T) {
	f := New(Options{})
	ivk := newInvoker(t, map[string]string{"methods.Say.loadbalance": "loadaware", "at": "attachments"}, func() result.Result {
		// dubbo protocol, or a Java provider over dubbo: attachments.
		return &result.RPCResult{Attrs: map[string]any{loadreport.JavaKey: "curTime:1764560000123,load:50"}}
	})
	f.Invoke(context.Background(), ivk, invocation.NewRPCInvocation("Say", nil, nil))
	assert.Equal(t, 50.0, rpcstatus.Of(ivk.GetURL()).Load().Report().JavaLoad)
	_, ok := rpcstatus.Of(ivk.GetURL()).Load().Utilization()
	assert.False(t, ok, "a Java provider's load is the machine's, not its utilization")
	jl, ok := rpcstatus.Of(ivk.GetURL()).Load().JavaLoad()
	assert.True(t, ok)
	assert.Equal(t, 50.0, jl)
}

func TestAsksOnlyWhenConfigured(t *testing.T) {
	for params, want := range map[string]bool{
		"loadbalance=loadaware":                              true,
		"loadbalance=random":                                 false,
		"loadbalance=loadaware&lb.load-report=false":         false,
		"loadbalance=random&methods.Say.lb.load-report=TRUE": true,
		"methods.Other.loadbalance=loadaware":                false,
	} {
		u := newInvoker(t, map[string]string{"p": params}, nil).GetURL()
		for _, kv := range splitParams(params) {
			u.SetParam(kv[0], kv[1])
		}
		assert.Equal(t, want, asksLoad(u, "Say"), params)
	}
	// Not asked: nothing is attached.
	ivk := &trailerInvoker{fakeInvoker: newInvoker(t, map[string]string{"loadbalance": "random", "at": "none"}, nil)}
	f := New(Options{})
	f.Invoke(context.Background(), ivk, invocation.NewRPCInvocation("Say", nil, nil))
	assert.Empty(t, ivk.asked)
}

func splitParams(s string) [][2]string {
	var out [][2]string
	for _, kv := range splitOn(s, '&') {
		p := splitOn(kv, '=')
		out = append(out, [2]string{p[0], p[1]})
	}
	return out
}

func splitOn(s string, sep byte) []string {
	var out []string
	for {
		i := 0
		for i < len(s) && s[i] != sep {
			i++
		}
		out = append(out, s[:i])
		if i == len(s) {
			return out
		}
		s = s[i+1:]
	}
}

// Asking adds nothing of the filter's own to allocate: the attachment
// value is boxed once, the trailer header comes from a pool. (dubbo-go's
// triple invoker allocates the trailers it copies.)
func TestAskingAllocatesNothingOfItsOwn(t *testing.T) {
	f := New(Options{})
	ivk := newInvoker(t, map[string]string{"loadbalance": "loadaware", "at": "allocs"}, func() result.Result {
		return okResult
	})
	inv := invocation.NewRPCInvocation("Say", nil, nil)
	f.Invoke(context.Background(), ivk, inv)
	require.True(t, lookupAsk(ivk))
	assert.Zero(t, testing.AllocsPerRun(1000, func() { f.Invoke(context.Background(), ivk, inv) }))
}

func lookupAsk(ivk base.Invoker) bool {
	_, m := New(Options{}).lookup(ivk.GetURL(), "Say", rpcstatus.Nanotime())
	return m.ask
}
