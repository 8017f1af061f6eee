package filter

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"dubbo.apache.org/dubbo-go/v3/common"
	"dubbo.apache.org/dubbo-go/v3/protocol/base"
	"dubbo.apache.org/dubbo-go/v3/protocol/invocation"
	"dubbo.apache.org/dubbo-go/v3/protocol/result"
	"dubbo.apache.org/dubbo-go/v3/protocol/triple/triple_protocol"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dubbogo-lb/lb/internal/statuscode"
	"github.com/dubbogo-lb/lb/internal/urlmap"
	"github.com/dubbogo-lb/lb/internal/urlparam"
	"github.com/dubbogo-lb/lb/rpcstatus"
)

// fakeInvoker answers with do, or with an empty success.
type fakeInvoker struct {
	*base.BaseInvoker
	do func() result.Result
}

func (f *fakeInvoker) Invoke(context.Context, base.Invocation) result.Result {
	if f.do != nil {
		return f.do()
	}
	return okResult
}

func newInvoker(t testing.TB, params map[string]string, do func() result.Result) *fakeInvoker {
	opts := []common.Option{common.WithProtocol("tri"), common.WithIp("127.0.0.1"), common.WithPort("20000"), common.WithPath("svc.Greeter")}
	for k, v := range params {
		opts = append(opts, common.WithParamsValue(k, v))
	}
	u := common.NewURLWithOptions(opts...)
	urlparam.MarkConsumer(u) // its consumer-only keys are its consumer's, as a reference's are
	return &fakeInvoker{BaseInvoker: base.NewBaseInvoker(u), do: do}
}

// slotHeld is a filter whose waits ft times, an invoker (params) whose
// calls each send on entered when they start, then return a success once
// they receive from release (or release is closed), and a call of Say to
// it that holds its slot: the first call, whose result comes on first.
type slotHeld struct {
	ft               *fakeTimer
	f                *Filter
	ivk              *fakeInvoker
	say              base.Invocation
	entered, release chan struct{}
	first            <-chan result.Result
}

// holdSlot returns a slotHeld once its first call has started.
func holdSlot(t testing.TB, params map[string]string) *slotHeld {
	h := &slotHeld{ft: newFakeTimer(), say: invocation.NewRPCInvocation("Say", nil, nil),
		entered: make(chan struct{}, 2), release: make(chan struct{})}
	h.f = New(Options{After: h.ft.after})
	h.ivk = newInvoker(t, params, func() result.Result {
		h.entered <- struct{}{}
		<-h.release
		return &result.RPCResult{}
	})
	h.first = goInvoke(h.f, h.ivk, h.say)
	<-h.entered
	return h
}

// goInvoke calls f.Invoke with ivk and inv on a goroutine of its own and
// returns the channel its result comes on.
func goInvoke(f *Filter, ivk base.Invoker, inv base.Invocation) <-chan result.Result {
	c := make(chan result.Result, 1)
	go func() { c <- f.Invoke(context.Background(), ivk, inv) }()
	return c
}

// okResult is shared so that benchmarks measure the filter, not the fake.
var okResult result.Result = &result.RPCResult{}

// clock is a manual monotonic clock.
type clock struct{ ns int64 }

func (c *clock) now() int64 { return c.ns }

func TestEndsOnceOnSuccessErrorAndPanic(t *testing.T) {
	c := &clock{ns: 1000}
	f := New(Options{Now: c.now})
	inv := invocation.NewRPCInvocation("Say", nil, nil)

	ok := newInvoker(t, nil, func() result.Result { c.ns += 500; return &result.RPCResult{} })
	res := f.OnResponse(context.Background(), f.Invoke(context.Background(), ok, inv), ok, inv)
	require.NoError(t, res.Error())
	s := rpcstatus.Of(ok.GetURL()).Method("Say")
	assert.EqualValues(t, 0, s.Active())
	assert.EqualValues(t, 1, s.Total())
	assert.EqualValues(t, 0, s.Failed())
	assert.Equal(t, 500*time.Nanosecond, s.TotalElapsed())

	bad := newInvoker(t, nil, func() result.Result { return &result.RPCResult{Err: errors.New("boom")} })
	f.OnResponse(context.Background(), f.Invoke(context.Background(), bad, inv), bad, inv)
	s = rpcstatus.Of(bad.GetURL()).Method("Say")
	assert.EqualValues(t, 0, s.Active())
	assert.EqualValues(t, 1, s.Failed())

	nilRes := newInvoker(t, nil, func() result.Result { return nil })
	f.Invoke(context.Background(), nilRes, inv)
	assert.EqualValues(t, 1, rpcstatus.Of(nilRes.GetURL()).Method("Say").Failed(), "a nil result counts as a failure")

	panics := newInvoker(t, nil, func() result.Result { panic("provider stub exploded") })
	assert.PanicsWithValue(t, "provider stub exploded", func() { f.Invoke(context.Background(), panics, inv) })
	s = rpcstatus.Of(panics.GetURL()).Method("Say")
	assert.EqualValues(t, 0, s.Active(), "a panic must still end the call")
	assert.EqualValues(t, 1, s.Total())
	assert.EqualValues(t, 1, s.Failed())
	assert.EqualValues(t, 1, rpcstatus.Of(panics.GetURL()).All().Total())
}

func TestCountsInFlightWhileCallRuns(t *testing.T) {
	f := New(Options{})
	inv := invocation.NewRPCInvocation("Say", nil, nil)
	var seen int64
	var ivk *fakeInvoker
	ivk = newInvoker(t, nil, func() result.Result {
		seen = rpcstatus.Of(ivk.GetURL()).Method("Say").Active()
		return &result.RPCResult{}
	})
	f.Invoke(context.Background(), ivk, inv)
	assert.EqualValues(t, 1, seen)
	assert.Empty(t, inv.Attachments(), "nothing is sent to the provider")
}

func TestConcurrentCallsKeepCountsExact(t *testing.T) {
	f := New(Options{})
	ivk := newInvoker(t, nil, func() result.Result { return &result.RPCResult{} })
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			inv := invocation.NewRPCInvocation([]string{"A", "B"}[g%2], nil, nil)
			for range 500 {
				f.Invoke(context.Background(), ivk, inv)
			}
		})
	}
	wg.Wait()
	p := rpcstatus.Of(ivk.GetURL())
	assert.EqualValues(t, 0, p.All().Active())
	assert.EqualValues(t, 8000, p.All().Total())
	assert.EqualValues(t, 4000, p.Method("A").Total())
	assert.EqualValues(t, 4000, p.Method("B").Total())
}

// fakeTimer hands out a channel the test fires by hand.
type fakeTimer struct {
	mu    sync.Mutex
	asked chan time.Duration
	fire  chan time.Time
}

func newFakeTimer() *fakeTimer {
	return &fakeTimer{asked: make(chan time.Duration, 8), fire: make(chan time.Time, 8)}
}

func (ft *fakeTimer) after(d time.Duration) <-chan time.Time {
	ft.asked <- d
	return ft.fire
}

func TestActiveLimitWaiterGetsFreedSlot(t *testing.T) {
	h := holdSlot(t, map[string]string{"methods.Say.actives": "1", "timeout": "2s"})
	second := goInvoke(h.f, h.ivk, h.say)
	assert.Equal(t, 2*time.Second, <-h.ft.asked, "waits up to the method timeout")

	h.release <- struct{}{} // the first call ends, its slot goes to the waiter
	require.NoError(t, (<-h.first).Error())
	<-h.entered
	h.release <- struct{}{}
	require.NoError(t, (<-second).Error())
	s := rpcstatus.Of(h.ivk.GetURL()).Method("Say")
	assert.EqualValues(t, 2, s.Total())
	assert.EqualValues(t, 0, s.Active())
}

func TestActiveLimitTimesOutWithClearError(t *testing.T) {
	h := holdSlot(t, map[string]string{"actives": "1", "timeout": "1500"})
	waited := goInvoke(h.f, h.ivk, h.say)
	assert.Equal(t, 1500*time.Millisecond, <-h.ft.asked, "a Java-style timeout in ms")
	h.ft.fire <- time.Time{}
	res := <-waited
	require.Error(t, res.Error())
	assert.ErrorIs(t, res.Error(), ErrActiveLimit)
	assert.Contains(t, res.Error().Error(), "limit 1 (actives)")
	assert.Contains(t, res.Error().Error(), "method Say")

	h.release <- struct{}{}
	require.NoError(t, (<-h.first).Error())
	s := rpcstatus.Of(h.ivk.GetURL()).Method("Say")
	assert.EqualValues(t, 1, s.Total(), "the refused call was never started")
	assert.EqualValues(t, 0, s.Active())
}

func TestReadLimitDefaults(t *testing.T) {
	u := common.NewURLWithOptions(common.WithParamsValue("actives", "-3"), common.WithParamsValue("timeout", "soon"))
	assert.Equal(t, limit{wait: urlparam.DefaultTimeout}, readLimit(u, "Say"))
	u = common.NewURLWithOptions(common.WithParamsValue("actives", "5"), common.WithParamsValue("methods.Say.actives", "2"))
	assert.EqualValues(t, 2, readLimit(u, "Say").max)
	assert.EqualValues(t, 5, readLimit(u, "Other").max)
}

// A Java provider spells its method-level actives and timeout <method>.actives
// and <method>.timeout (milliseconds).
func TestReadLimitJavaSpelling(t *testing.T) {
	u, err := common.NewURL("dubbo://10.0.0.7:20880/org.example.DemoService?methods=Say,Other&actives=5&timeout=3000&Say.actives=2&Say.timeout=700")
	if err != nil {
		t.Fatal(err)
	}
	assert.Equal(t, limit{max: 2, wait: 700 * time.Millisecond}, readLimit(u, "Say"))
	assert.Equal(t, limit{max: 5, wait: 3 * time.Second}, readLimit(u, "Other"))
}

// The hot path allocates nothing, with and without an actives limit that
// is not reached.
func TestInvokeAllocatesNothing(t *testing.T) {
	f := New(Options{})
	ctx := context.Background()
	inv := invocation.NewRPCInvocation("Say", nil, nil)
	for _, params := range []map[string]string{nil, {"actives": "4"}} {
		ivk := newInvoker(t, params, nil)
		f.OnResponse(ctx, f.Invoke(ctx, ivk, inv), ivk, inv) // first use reads the URL
		if a := testing.AllocsPerRun(1000, func() { f.OnResponse(ctx, f.Invoke(ctx, ivk, inv), ivk, inv) }); a != 0 {
			t.Errorf("%v: %v allocations per call, want 0", params, a)
		}
	}
}

// The limit is per (provider, method): a call of another method does not
// wait for a slot that one method holds.
func TestActiveLimitIsPerMethod(t *testing.T) {
	h := holdSlot(t, map[string]string{"actives": "1"}) // Say holds its only slot
	bye := goInvoke(h.f, h.ivk, invocation.NewRPCInvocation("Bye", nil, nil))
	select {
	case <-h.entered:
	case d := <-h.ft.asked:
		t.Fatalf("Bye waited (up to %v) for Say's slot", d)
	}
	close(h.release)
	require.NoError(t, (<-h.first).Error())
	require.NoError(t, (<-bye).Error())
	s := rpcstatus.Of(h.ivk.GetURL())
	assert.EqualValues(t, 1, s.Method("Say").Total())
	assert.EqualValues(t, 1, s.Method("Bye").Total())
}

// statusCode finds the triple status of an error however it is wrapped;
// the context's errors are timeouts and cancellations; anything else has
// no code.
func TestStatusCode(t *testing.T) {
	unavailable := triple_protocol.NewError(triple_protocol.CodeUnavailable, errors.New("connection refused"))
	biz := triple_protocol.NewError(triple_protocol.CodeBizError, errors.New("no such user"))
	for _, c := range []struct {
		err  error
		want int
	}{
		{unavailable, 14},
		{fmt.Errorf("call failed: %w", unavailable), 14},
		{biz, 17},
		{fmt.Errorf("a: %w", fmt.Errorf("b: %w", biz)), 17},
		{triple_protocol.NewError(triple_protocol.CodeInternal, context.DeadlineExceeded), 13},
		{context.DeadlineExceeded, 4},
		{fmt.Errorf("waited: %w", context.Canceled), 1},
		{errors.New("EOF"), rpcstatus.NoCode},
		{base.ErrClientClosed, rpcstatus.NoCode},
	} {
		assert.Equal(t, c.want, statusCode(c.err), "%v", c.err)
	}
}

// The filter judges every call for outlier detection: failures with a
// counted status extend the provider's run and raise the alarm of its
// board at the threshold; a success ends the run; with a failing result
// the hot path still allocates nothing.
func TestInvokeFeedsOutlierDetection(t *testing.T) {
	c := &clock{ns: 1000}
	f := New(Options{Now: c.now})
	ctx := context.Background()
	inv := invocation.NewRPCInvocation("Say", nil, nil)
	fail := &result.RPCResult{Err: triple_protocol.NewError(triple_protocol.CodeUnavailable, errors.New("down"))}
	biz := &result.RPCResult{Err: triple_protocol.NewError(triple_protocol.CodeBizError, errors.New("no"))}
	var next result.Result
	ivk := newInvoker(t, map[string]string{"i": "outlier"}, func() result.Result { c.ns += 10; return next })
	s := rpcstatus.Of(ivk.GetURL()).Method("Say")
	var b rpcstatus.Board
	b.Configure(3, statuscode.DefaultCounted)
	s.Link(&b)
	call := func(r result.Result) { next = r; f.OnResponse(ctx, f.Invoke(ctx, ivk, inv), ivk, inv) }

	call(fail)
	call(fail)
	assert.EqualValues(t, 2, s.Streak())
	call(biz) // not counted: the provider answered, which ends the run
	assert.Zero(t, s.Streak())
	call(fail)
	call(okResult)
	assert.Zero(t, s.Streak())
	call(fail)
	call(fail)
	call(fail)
	n, at := b.Alarm()
	assert.EqualValues(t, 1, n)
	assert.Equal(t, c.ns, at, "raised at the end of the third failure, on the filter's clock")

	next = fail
	if a := testing.AllocsPerRun(1000, func() { f.OnResponse(ctx, f.Invoke(ctx, ivk, inv), ivk, inv) }); a != 0 {
		t.Errorf("%v allocations per failed call, want 0", a)
	}
}

// A (provider, method) without a call for the idle time is released with
// the filter's hold on its statistics, when a later first call of another
// method sweeps; a method still called is kept.
func TestIdleMethodsAreReleased(t *testing.T) {
	c := &clock{ns: int64(time.Hour)}
	f := New(Options{Now: c.now, Idle: time.Minute})
	ivk := newInvoker(t, map[string]string{"lb.test": t.Name()}, nil)
	call := func(m string) { f.Invoke(context.Background(), ivk, invocation.NewRPCInvocation(m, nil, nil)) }
	call("Idle")
	call("Kept")
	e := providers.Load(ivk.GetURL())
	require.NotNil(t, e)
	idle, _ := e.methods.Get("Idle", 0)
	c.ns += int64(50 * time.Second)
	call("Kept")
	c.ns += int64(50 * time.Second)
	call("New") // a first call: sweeps
	assert.True(t, urlmap.Released(idle), "idle for 100 s > 1 min")
	assert.Equal(t, 2, e.methods.Len(), "Kept and New")
	idle = nil // the test's own hold on the released state
	p := rpcstatus.Of(ivk.GetURL())
	for i := 0; i < 100 && p.MethodCount() > 2; i++ {
		runtime.GC()
		runtime.Gosched()
	}
	assert.Equal(t, 2, p.MethodCount(), "the statistics of Idle are gone")
	call("Idle")
	assert.EqualValues(t, 1, p.Method("Idle").Total(), "made anew")
	assert.EqualValues(t, 2, p.Method("Kept").Total())
}

// Method names beyond rpcstatus.MethodLimit share one state and one Stats.
func TestMethodsBeyondTheLimitShareOneState(t *testing.T) {
	f := New(Options{})
	ivk := newInvoker(t, map[string]string{"lb.test": t.Name()}, nil)
	for i := range rpcstatus.MethodLimit + 10 {
		f.Invoke(context.Background(), ivk, invocation.NewRPCInvocation("m"+strconv.Itoa(i), nil, nil))
	}
	e := providers.Load(ivk.GetURL())
	assert.Equal(t, rpcstatus.MethodLimit, e.methods.Len())
	p := rpcstatus.Of(ivk.GetURL())
	assert.EqualValues(t, 10, p.Method(urlmap.Overflow).Total())
	assert.EqualValues(t, 1, p.Method("m0").Total())
}
