package providerload

import (
	"context"
	"errors"
	"testing"
	"time"

	"dubbo.apache.org/dubbo-go/v3/common"
	"dubbo.apache.org/dubbo-go/v3/protocol/base"
	"dubbo.apache.org/dubbo-go/v3/protocol/invocation"
	"dubbo.apache.org/dubbo-go/v3/protocol/result"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dubbogo-lb/lb/rpcstatus/loadreport"
)

// fake is an injected clock, CPU clock and load average.
type fake struct {
	now  time.Time
	cpu  time.Duration
	load float64
}

func (f *fake) opts() Options {
	return Options{
		CPUs:        2,
		Smoothing:   time.Second,
		Now:         func() time.Time { return f.now },
		CPUTime:     func() (time.Duration, bool) { return f.cpu, true },
		LoadAverage: func() (float64, bool) { return f.load, true },
	}
}

// invoker answers with err, or calls during while the call is in flight.
type invoker struct {
	*base.BaseInvoker
	err    error
	during func()
	panics bool
}

func (i *invoker) Invoke(context.Context, base.Invocation) result.Result {
	if i.during != nil {
		i.during()
	}
	if i.panics {
		panic("boom")
	}
	return &result.RPCResult{Err: i.err, Rest: "ok"}
}

func newInvoker(t testing.TB, params string) *invoker {
	u, err := common.NewURL("tri://127.0.0.1:20000/org.example.Greeter?interface=org.example.Greeter" + params)
	require.NoError(t, err)
	return &invoker{BaseInvoker: base.NewBaseInvoker(u)}
}

func asking() base.Invocation {
	// As dubbo-go's triple server hands attachments over: lower-case keys,
	// []string values.
	return invocation.NewRPCInvocation("Hello", nil, map[string]any{loadreport.AskKey: []string{loadreport.AskValue}})
}

func TestAnswersOnlyWhenAsked(t *testing.T) {
	fk := &fake{now: time.UnixMilli(1_764_560_000_000), load: 0.75}
	f := New(fk.opts())
	f.state.init(f)
	f.Sample()
	inv := newInvoker(t, "&lb.capacity=200")

	res := f.Invoke(context.Background(), inv, invocation.NewRPCInvocation("Hello", nil, nil))
	assert.Empty(t, res.Attachments(), "a call that does not ask gets nothing")
	assert.Zero(t, f.Answered(), "a call that does not ask is not counted as answered")

	fk.now = fk.now.Add(time.Second)
	fk.cpu += time.Second // one of two CPUs busy for the second
	f.Sample()
	res = f.Invoke(context.Background(), inv, asking())
	java, _ := res.Attachment(loadreport.JavaKey, nil).(string)
	own, _ := res.Attachment(loadreport.OwnKey, nil).(string)
	require.NotEmpty(t, java)
	require.NotEmpty(t, own)
	assert.Equal(t, int64(1), f.Answered(), "the call that asked is counted")

	var r loadreport.Report
	loadreport.Parse(java, &r)
	assert.Equal(t, int64(1_764_560_001_000), r.TimeMs)
	// Java's units: the load average × 100 / the machine's CPUs.
	assert.InDelta(t, 75/float64(numCPU()), r.JavaLoad, 1e-3)
	var o loadreport.Report
	loadreport.Parse(own, &o)
	// Utilization 0.5 for 1 s, smoothed with a 1 s time constant from 0.
	assert.InDelta(t, 0.5*(1-1/2.718281828), o.CPU, 1e-3)
	assert.Equal(t, 200.0, o.Capacity, "the capacity of the provider URL (sampled after the first call)")
	assert.Greater(t, o.QPS, 0.0)
	assert.Equal(t, loadreport.Own|loadreport.HasTime, o.Has)
}

func TestCountsInflightFailuresAndPanics(t *testing.T) {
	fk := &fake{now: time.Unix(1000, 0)}
	f := New(fk.opts())
	inv := newInvoker(t, "")
	var seen int64
	inv.during = func() { seen = f.Inflight() }
	f.Invoke(context.Background(), inv, asking())
	assert.Equal(t, int64(1), seen)
	assert.Equal(t, int64(0), f.Inflight())

	inv.during, inv.err = nil, errors.New("bad")
	f.Invoke(context.Background(), inv, asking())
	inv.err, inv.panics = nil, true
	assert.Panics(t, func() { f.Invoke(context.Background(), inv, asking()) })
	assert.Equal(t, int64(0), f.Inflight(), "a panic ends its count")
	assert.Equal(t, int64(3), f.done.Load())
	assert.Equal(t, int64(2), f.failed.Load())

	// Rates: 3 calls, 2 failed, in the second before the sample.
	fk.now = fk.now.Add(time.Second)
	f.Sample()
	r := f.Report()
	assert.InDelta(t, 3*(1-1/2.718281828), r.QPS, 1e-3)
	assert.InDelta(t, 2*(1-1/2.718281828), r.EPS, 1e-3)
	f.Stop()
}

func TestBadCapacityAndMissingFigures(t *testing.T) {
	fk := &fake{now: time.Unix(1000, 0)}
	o := fk.opts()
	o.CPUTime = func() (time.Duration, bool) { return 0, false }
	o.LoadAverage = func() (float64, bool) { return 0, false }
	f := New(o)
	for _, c := range []string{"&lb.capacity=-3", "&lb.capacity=abc", "&lb.capacity=1e99"} {
		f.Invoke(context.Background(), newInvoker(t, c), asking())
	}
	f.Sample()
	r := f.Report()
	assert.Zero(t, r.Has&(loadreport.HasCapacity|loadreport.HasCPU|loadreport.HasJavaLoad))
	res := f.Invoke(context.Background(), newInvoker(t, ""), asking())
	var back loadreport.Report
	loadreport.Parse(res.Attachment(loadreport.JavaKey, nil).(string), &back)
	assert.Zero(t, back.Has&loadreport.HasJavaLoad, "Java's -100/CPUs for no load average, which a reader drops")
	f.Stop()
}

func TestParseLoadAvg(t *testing.T) {
	v, ok := parseLoadAvg("0.52 0.58 0.59 1/467 12345\n")
	assert.True(t, ok)
	assert.Equal(t, 0.52, v)
	_, ok = parseLoadAvg("")
	assert.False(t, ok)
	_, ok = parseLoadAvg("x 1 2")
	assert.False(t, ok)
}

func TestInvokeAllocatesNothingOfItsOwn(t *testing.T) {
	f := New((&fake{now: time.Unix(1000, 0)}).opts())
	inv := newInvoker(t, "")
	res := &result.RPCResult{Attrs: map[string]any{}}
	next := &fixed{BaseInvoker: inv.BaseInvoker, res: res}
	ask := asking()
	f.Invoke(context.Background(), next, ask)
	assert.Zero(t, testing.AllocsPerRun(1000, func() { f.Invoke(context.Background(), next, ask) }))
	f.Stop()
}

// fixed returns the same result every time.
type fixed struct {
	*base.BaseInvoker
	res result.Result
}

func (i *fixed) Invoke(context.Context, base.Invocation) result.Result { return i.res }
