package rpcstatus

import (
	"math"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"
	"weak"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dubbogo-lb/lb/internal/urlmap"
)

func TestStatsCountsAndElapsed(t *testing.T) {
	var s Stats
	s.Begin(1000)
	s.Begin(2000)
	assert.EqualValues(t, 2, s.Active())
	s.End(1000, 5000, false) // 4000 ns
	s.End(2000, 12000, true) // 10000 ns
	assert.EqualValues(t, 0, s.Active())
	assert.EqualValues(t, 2, s.Total())
	assert.EqualValues(t, 1, s.Failed())
	assert.Equal(t, 14000*time.Nanosecond, s.TotalElapsed())
	assert.Equal(t, 10000*time.Nanosecond, s.FailedElapsed())
	assert.Equal(t, 10000*time.Nanosecond, s.MaxElapsed())
	assert.Equal(t, 4000*time.Nanosecond, s.SucceededAverage())
}

func TestTryBeginRespectsLimit(t *testing.T) {
	var s Stats
	require.True(t, s.TryBegin(0, 2))
	require.True(t, s.TryBegin(0, 2))
	assert.False(t, s.TryBegin(0, 2))
	assert.EqualValues(t, 2, s.Active())
	s.End(0, 1, false)
	assert.True(t, s.TryBegin(0, 2))
	assert.True(t, s.TryBegin(0, 0), "no limit")
}

func TestInflightDelay(t *testing.T) {
	var s Stats
	assert.Zero(t, s.InflightDelay(time.Second.Nanoseconds()))
	s.Begin(int64(1 * time.Second))
	s.Begin(int64(3 * time.Second))
	// ages 4 s and 2 s at t = 5 s
	assert.Equal(t, 3*time.Second, s.InflightDelay(int64(5*time.Second)))
	s.End(int64(1*time.Second), int64(5*time.Second), false)
	assert.Equal(t, 2*time.Second, s.InflightDelay(int64(5*time.Second)))
}

func TestConcurrentBeginEndKeepsCountsExact(t *testing.T) {
	var p Provider
	const goroutines, calls = 16, 2000
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			m := p.Method([]string{"a", "b"}[g%2])
			for i := range calls {
				c := p.Begin(m, int64(i))
				c.End(int64(i+10), i%10 == 0)
			}
		})
	}
	wg.Wait()
	all := p.All()
	assert.EqualValues(t, 0, all.Active())
	assert.EqualValues(t, goroutines*calls, all.Total())
	assert.EqualValues(t, goroutines*calls/10, all.Failed())
	assert.Equal(t, time.Duration(goroutines*calls*10), all.TotalElapsed())
	assert.EqualValues(t, goroutines*calls/2, p.Method("a").Total())
	assert.EqualValues(t, 0, p.Method("a").inflightStartSum.Load())
	n := 0
	p.Methods(func(string, *Stats) { n++ })
	assert.Equal(t, 2, n)
}

func TestMaxElapsedUnderContention(t *testing.T) {
	var s Stats
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 1000 {
				s.Begin(0)
				s.End(0, int64(g*1000+i), false)
			}
		})
	}
	wg.Wait()
	assert.Equal(t, time.Duration(7999), s.MaxElapsed())
}

func TestWindowSummary(t *testing.T) {
	var w Window
	assert.Equal(t, WindowSummary{}, w.Summary())
	ms := int64(time.Millisecond)
	for i := range 10 {
		w.Add(int64(i)*ms, 2*ms, i%5 == 0) // errors at 0 and 5
	}
	s := w.Summary()
	assert.EqualValues(t, 10, s.Samples)
	assert.EqualValues(t, 2, s.Errors)
	assert.Equal(t, 2*time.Millisecond, s.SuccessLatency)
	assert.Equal(t, 2*time.Millisecond, s.ErrorLatency)
	assert.Equal(t, 9*time.Millisecond, s.Span)
	assert.InDelta(t, 1000, s.QPS(), 1e-6)

	// Overwrite the whole ring with fast successes: old samples leave the sums.
	for i := range WindowSize {
		w.Add(int64(100+i)*ms, ms, false)
	}
	s = w.Summary()
	assert.EqualValues(t, WindowSize, s.Samples)
	assert.EqualValues(t, 0, s.Errors)
	assert.Equal(t, time.Millisecond, s.SuccessLatency)
	assert.Equal(t, time.Duration(WindowSize-1)*time.Millisecond, s.Span)
}

func TestPeakEWMA(t *testing.T) {
	var e PeakEWMA
	_, ok := e.Value(0)
	assert.False(t, ok)
	ms := int64(time.Millisecond)
	e.observe(0, 10*ms)
	v, ok := e.Value(0)
	assert.True(t, ok)
	assert.InDelta(t, 10*ms, int64(v), float64(ms)/100)
	// A peak replaces the average at once.
	e.observe(ms, 100*ms)
	v, _ = e.Value(ms)
	assert.InDelta(t, 100*ms, int64(v), float64(ms))
	// A decay time later it reads 100/e ms; a lower sample then moves it
	// 1-1/e of the way from there to the sample.
	at := ms + int64(EWMADecay)
	before, _ := e.Value(at)
	assert.InDelta(t, 100/math.E, float64(before)/float64(ms), 0.1)
	e.observe(at, 10*ms)
	v, _ = e.Value(at)
	assert.InDelta(t, 100/math.E/math.E+10*(1-1/math.E), float64(v)/float64(ms), 0.1)
	assert.Less(t, v, before, "a sample below the average never raises it")
	// Without samples it decays, so a punished provider is tried again.
	v2, _ := e.Value(at + 3*int64(EWMADecay))
	assert.Less(t, int64(v2), int64(v)/10)

	// A sample above the decayed average replaces it, even below the old
	// peak it decayed from.
	var p PeakEWMA
	p.observe(0, 100*ms)
	at = 2 * int64(EWMADecay) // reads 100/e² ≈ 13.5 ms
	p.observe(at, 20*ms)
	v, _ = p.Value(at)
	assert.InDelta(t, 20, float64(v)/float64(ms), 0.01)
}

// Samples close together forget within EWMASamples: after a 100 ms peak,
// 3 × EWMASamples samples of 10 ms a millisecond apart bring the average to
// within (1 − 1/EWMASamples)^(3 × EWMASamples) of the 90 ms between them,
// under 5 %. The time decay alone would keep it above 90 ms (control:
// the same samples 3 × EWMASamples ms after the peak, read by the fade).
func TestPeakEWMAForgetsWithinItsSamples(t *testing.T) {
	ms := int64(time.Millisecond)
	var e PeakEWMA
	e.observe(0, 100*ms)
	n := int64(3 * EWMASamples)
	for k := int64(1); k <= n; k++ {
		e.observe(k*ms, 10*ms)
	}
	v, _ := e.Value(n * ms)
	want := 10 + 90*math.Pow(1-1.0/EWMASamples, float64(n))
	assert.InDelta(t, want, float64(v)/float64(ms), 1.5, "within the fade of the stamps")
	assert.Less(t, float64(v)/float64(ms), 10+0.05*90)
	assert.Greater(t, 100*math.Exp(-2*float64(n*ms)/float64(EWMADecay)), 90.0, "the time decay alone keeps most of the peak: the check proves something")
}

// TestDecayMatchesExp checks the series that replaces math.Exp for short
// gaps against it, up to and past the switch, at the stamp resolution.
func TestDecayMatchesExp(t *testing.T) {
	for ds := int64(0); ds < 1200; ds++ {
		dt := float64(ds << stampShift)
		want := math.Exp(-dt / float64(EWMADecay))
		require.InEpsilon(t, want, decay(dt), 1e-9, "dt=%v", time.Duration(dt))
	}
}

// TestPairOrdersLikeValue: Pair's averages stand in the ratio of Values
// read at any later time, and say which EWMA has no sample.
func TestPairOrdersLikeValue(t *testing.T) {
	ms := int64(time.Millisecond)
	var a, b, empty PeakEWMA
	a.observe(1000*ms, 4*ms)
	b.observe(9000*ms, 3*ms)
	va, vb, oka, okb := Pair(&a, &b)
	require.True(t, oka && okb)
	for _, now := range []int64{9000 * ms, 12000 * ms, 60000 * ms} {
		wa, _ := a.Value(now)
		wb, _ := b.Value(now)
		assert.InEpsilon(t, float64(wa)/float64(wb), va/vb, 1e-4, "now %d ms (Value truncates to 1 ns)", now/ms)
	}
	assert.Less(t, va, vb, "4 ms eight seconds older is below 3 ms")
	vb2, va2, okb2, oka2 := Pair(&b, &a)
	assert.Equal(t, []any{va, vb, oka, okb}, []any{va2, vb2, oka2, okb2}, "symmetric")

	_, ve, ok, okEmpty := Pair(&a, &empty)
	assert.True(t, ok)
	assert.False(t, okEmpty)
	assert.Zero(t, ve)
}

// SilentLonger tells which of two averages went longer without a sample,
// and by how much, to the stamp's resolution (2^20 ns), across the wrap
// of the stamp.
func TestSilentLonger(t *testing.T) {
	ms := int64(time.Millisecond)
	var a, b, empty PeakEWMA
	a.observe(1000*ms, 4*ms)
	b.observe(9000*ms, 3*ms)
	assert.InDelta(t, 8000*ms, SilentLonger(&a, &b), float64(2<<stampShift))
	assert.Equal(t, -SilentLonger(&a, &b), SilentLonger(&b, &a))
	assert.Zero(t, SilentLonger(&a, &empty), "no sample: no comparison")
	assert.Zero(t, SilentLonger(&empty, &b))

	var c, d PeakEWMA
	wrap := int64(1) << (32 + stampShift) // the stamps' period
	c.observe(wrap-500*ms, ms)
	d.observe(wrap+500*ms, ms)
	assert.InDelta(t, 1000*ms, SilentLonger(&c, &d), float64(2<<stampShift), "across the wrap")
}

// Judge keeps the run of failures the board counts, raises the alarm when
// the run reaches the threshold and when the time asked for has come.
func TestJudgeRunsAndAlarm(t *testing.T) {
	ms := int64(time.Millisecond) // the resolution of failure times
	var s Stats
	s.Judge(1*ms, true, NoCode)
	assert.Zero(t, s.Streak(), "without a board failures do not count")

	var b Board
	b.Configure(3, 1<<NoCode|1<<14)
	s.Link(&b)
	s.Judge(2*ms, true, NoCode)
	s.Judge(2*ms, true, 2) // a code the board does not count ends the run
	assert.Zero(t, s.Streak())
	s.Judge(3*ms, true, NoCode)
	s.Judge(4*ms, true, 14)
	assert.EqualValues(t, 2, s.Streak())
	assert.Zero(t, b.Raised())
	s.Judge(5*ms, true, 14)
	n, at := b.Alarm()
	assert.EqualValues(t, 1, n, "the third failure in a row")
	assert.EqualValues(t, 5*ms, at)
	assert.EqualValues(t, 5*ms, b.LastFailure())
	s.Judge(6*ms, true, NoCode)
	assert.EqualValues(t, 1, b.Raised(), "once per run")
	assert.EqualValues(t, 5, s.Counted())
	s.Judge(7*ms, false, 0)
	assert.Zero(t, s.Streak())
	assert.True(t, b.Counts(99) == b.Counts(31), "codes beyond 31 are judged as 31")

	b.WakeAt(10 * ms)
	s.Judge(9*ms, false, 0)
	assert.EqualValues(t, 1, b.Raised())
	s.Judge(10*ms, false, 0)
	n, at = b.Alarm()
	assert.EqualValues(t, 2, n, "the first call at the time asked for")
	assert.EqualValues(t, 10*ms, at)
	s.Judge(11*ms, false, 0)
	assert.EqualValues(t, 2, b.Raised(), "once")

	b.ForgetFailures(5 * ms)
	assert.EqualValues(t, 6*ms, b.LastFailure(), "a later failure stays")
	b.ForgetFailures(6 * ms)
	assert.Zero(t, b.LastFailure())
}

// Penalty charges the run of failures while the latest is recent.
func TestPenalty(t *testing.T) {
	ms := int64(time.Millisecond) // the resolution of failure times
	var s Stats
	var b Board
	b.Configure(0, 1)
	s.Link(&b)
	assert.Zero(t, s.Penalty(100*ms, 10*ms))
	s.Judge(100*ms, true, NoCode)
	s.Judge(101*ms, true, NoCode)
	assert.EqualValues(t, 2, s.Penalty(110*ms, 10*ms))
	assert.Zero(t, s.Penalty(111*ms, 10*ms), "the window is over")
	s.Judge(112*ms, false, 0)
	assert.Zero(t, s.Penalty(112*ms, 10*ms), "a success ends it")
	assert.Zero(t, b.Raised(), "threshold 0 raises no alarm")
}

// Judge allocates nothing.
func TestJudgeAllocatesNothing(t *testing.T) {
	var s Stats
	var b Board
	b.Configure(5, 1)
	s.Link(&b)
	now := int64(0)
	allocs := testing.AllocsPerRun(1000, func() {
		now++
		s.Judge(now, now%3 == 0, NoCode)
	})
	assert.Zero(t, allocs)
}

func TestCleanSinceReturn(t *testing.T) {
	var s Stats
	assert.False(t, s.CleanSinceReturn(), "never ejected")
	s.Begin(0)
	s.End(0, 1, true)
	s.Returned()
	assert.True(t, s.CleanSinceReturn())
	s.Begin(2)
	s.End(2, 3, false)
	assert.True(t, s.CleanSinceReturn(), "successes keep it clean")
	s.Begin(4)
	s.End(4, 5, true)
	assert.False(t, s.CleanSinceReturn())
}

func TestEjectedNow(t *testing.T) {
	var s Stats
	assert.False(t, s.EjectedNow(), "never ejected")
	s.Ejected()
	assert.True(t, s.EjectedNow())
	s.Returned()
	assert.False(t, s.EjectedNow(), "let back")
	s.Ejected()
	assert.True(t, s.EjectedNow(), "ejected again")
	assert.EqualValues(t, 2, s.Ejections())
}

// SuccessIsNews tells the filter when a success need not be judged.
func TestSuccessIsNews(t *testing.T) {
	var s Stats
	assert.False(t, s.SuccessIsNews(), "no board")
	var b Board
	b.Configure(5, 1)
	s.Link(&b)
	assert.False(t, s.SuccessIsNews())
	s.Judge(1, true, NoCode)
	assert.True(t, s.SuccessIsNews(), "a run to end")
	s.Judge(2, false, 0)
	assert.False(t, s.SuccessIsNews())
	b.WakeAt(10)
	assert.True(t, s.SuccessIsNews(), "a wake-up to check")
}

// Failure times are kept to the millisecond: a failure within one of the
// time kept writes nothing (a storm of failures does not make every call
// write the board's shared word).
func TestFailureTimesToTheMillisecond(t *testing.T) {
	ms := int64(time.Millisecond)
	var s Stats
	var b Board
	b.Configure(0, 1)
	s.Link(&b)
	s.Judge(10*ms, true, NoCode)
	s.Judge(10*ms+ms/2, true, NoCode)
	assert.EqualValues(t, 10*ms, b.LastFailure())
	assert.EqualValues(t, 2, s.Penalty(11*ms-1, ms))
	assert.Zero(t, s.Penalty(11*ms, ms), "a window from the time kept")
	s.Judge(11*ms, true, NoCode)
	assert.EqualValues(t, 11*ms, b.LastFailure())
}

// Names beyond MethodLimit share the figures of urlmap.Overflow.
func TestMethodsBeyondTheLimitShareOverflow(t *testing.T) {
	var p Provider
	for i := range MethodLimit {
		p.Method("m" + strconv.Itoa(i)).Begin(1)
	}
	over := p.Method("one-too-many")
	assert.Same(t, over, p.Method("another"))
	assert.Same(t, over, p.Method(urlmap.Overflow))
	assert.NotSame(t, over, p.Method("m0"))
	assert.Equal(t, MethodLimit, p.MethodCount())
}

// Release lets go of idle figures: they stay shared while someone holds
// them, and go once no one does; figures in use are kept.
func TestReleaseDropsIdleMethods(t *testing.T) {
	var p Provider
	const sec = int64(time.Second)
	held := p.Method("held")
	held.Begin(1 * sec)
	held.End(1*sec, 2*sec, false)
	p.Method("idle").Begin(1 * sec)
	p.Method("idle").End(1*sec, 2*sec, false)
	busy := p.Method("busy")
	busy.Begin(1 * sec) // in flight
	recent := p.Method("recent")
	recent.Begin(100 * sec)

	p.Release(50 * sec)
	assert.Same(t, held, p.Method("held"), "held elsewhere: the same figures")
	p.Release(50 * sec)
	for i := 0; i < 100 && p.MethodCount() > 3; i++ {
		runtime.GC()
		runtime.Gosched()
	}
	assert.Equal(t, 3, p.MethodCount(), "the idle method's figures are gone")
	assert.Zero(t, p.Method("idle").Total(), "made anew")
	assert.Same(t, busy, p.Method("busy"))
	assert.Same(t, recent, p.Method("recent"))
	runtime.KeepAlive(held)
}

// The figures of a Provider that goes before any Release (its URL
// collected while it still held them) go with it: nothing the runtime
// keeps for their cleanup holds them.
func TestStatsOfACollectedProviderGo(t *testing.T) {
	gone := make([]weak.Pointer[Stats], 100)
	for i := range gone {
		p := new(Provider)
		s := p.Method("m")
		s.Begin(1)
		s.End(1, 2, false)
		gone[i] = weak.Make(s)
	}
	alive := func() (n int) {
		for _, w := range gone {
			if w.Value() != nil {
				n++
			}
		}
		return n
	}
	for i := 0; i < 100 && alive() > 0; i++ {
		runtime.GC()
		runtime.Gosched()
	}
	assert.Zero(t, alive(), "figures of collected providers still alive")
}
