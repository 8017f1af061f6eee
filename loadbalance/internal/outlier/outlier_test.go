package outlier

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"dubbo.apache.org/dubbo-go/v3/protocol/base"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dubbogo-lb/lb/internal/statuscode"
	"github.com/dubbogo-lb/lb/loadbalance/internal/lbtest"
	"github.com/dubbogo-lb/lb/rpcstatus"
)

const sec = int64(time.Second)

// fixture is n providers of one method, their statistics and a Detector;
// every time is given explicitly (the filter's clock), so the tests set
// the clock call by call.
type fixture struct {
	t     *testing.T
	list  []base.Invoker
	stats []*rpcstatus.Stats
	d     *Detector
	logs  func() []string
}

// newFixture returns n providers whose URLs carry params.
func newFixture(t *testing.T, n int, params map[string]string) *fixture {
	f := &fixture{t: t, d: new(Detector), logs: lbtest.CaptureLogs(t)}
	for i := range n {
		p := map[string]string{"weight": "100"}
		for k, v := range params {
			p[k] = v
		}
		inv := lbtest.Provider(21000+i, p)
		f.list = append(f.list, inv)
		f.stats = append(f.stats, rpcstatus.Of(inv.GetURL()).Method("Say"))
	}
	f.decide() // links the board, as the first snapshot does
	return f
}

// call records one call to provider i that ends at now, as the filter
// does: the statistics, then the judgement.
func (f *fixture) call(i int, now int64, failed bool, code int) {
	s := f.stats[i]
	s.Begin(now)
	s.End(now, now, failed)
	s.Judge(now, failed, code)
}

// fail records k failures without a status code on provider i at now.
func (f *fixture) fail(i int, now int64, k int) {
	for range k {
		f.call(i, now, true, rpcstatus.NoCode)
	}
}

func (f *fixture) decide() Decision { return f.d.Decide("Say", f.list, f.stats) }

// ejected returns the indexes of the ejected providers.
func (f *fixture) ejected() []int {
	out := []int{}
	for i, e := range f.decide().Ejected {
		if e {
			out = append(out, i)
		}
	}
	return out
}

// stale reports whether the board raised its alarm since dec.
func (f *fixture) stale(dec Decision) bool { return f.d.Board().Raised() != dec.Alarm }

func TestConsecutiveFailuresEject(t *testing.T) {
	f := newFixture(t, 5, nil)
	dec := f.decide()
	f.fail(0, 1*sec, 4)
	assert.False(t, f.stale(dec), "4 failures raise no alarm")
	f.call(0, 1*sec, false, 0) // a success ends the run
	f.fail(0, 1*sec, 4)
	assert.False(t, f.stale(dec))
	assert.Empty(t, f.ejected())

	f.fail(0, 2*sec, 1)
	assert.True(t, f.stale(dec), "the 5th failure in a row raises the alarm")
	assert.Equal(t, []int{0}, f.ejected())
	assert.Zero(t, f.stats[0].Streak(), "the run starts afresh on ejection")
	require.Len(t, f.logs(), 1)
	line := f.logs()[0]
	for _, want := range []string{"[dubbogo-lb] ", "127.0.0.1:21000", "Say", lbtest.Service, "ejected for 30s", "consecutive-failures", "5 failures in a row", "1 of 5 providers"} {
		assert.Contains(t, line, want)
	}
	// Deciding again changes nothing and logs nothing.
	assert.Equal(t, []int{0}, f.ejected())
	assert.Len(t, f.logs(), 1)
}

// Only failures the board counts extend the run: by default not business
// errors (biz_error, unknown) nor errors that blame the call.
func TestOnlyCountedFailuresExtendTheRun(t *testing.T) {
	f := newFixture(t, 3, nil)
	for _, code := range []int{statuscode.BizError, statuscode.Unknown, 3 /* invalid_argument */, 5 /* not_found */, 1 /* canceled */, -1 /* a panic */} {
		f.fail(0, sec, 4)
		f.call(0, sec, true, code)
		assert.Zero(t, f.stats[0].Streak(), "code %d ends the run", code)
	}
	assert.Empty(t, f.ejected())
	assert.EqualValues(t, 24, f.stats[0].Counted())
	f.stats[0].EndStreak()
	g0 := f.stats[0].Counted()
	for _, code := range []int{rpcstatus.NoCode, statuscode.DeadlineExceeded, statuscode.Unavailable, statuscode.Internal, statuscode.DataLoss} {
		f.call(0, sec, true, code)
	}
	assert.EqualValues(t, 5, f.stats[0].Streak())
	assert.EqualValues(t, g0+5, f.stats[0].Counted())
	assert.Equal(t, []int{0}, f.ejected())

	// outlier.errors=all counts business errors too.
	g := newFixture(t, 3, map[string]string{ErrorsKey: "all"})
	for range 5 {
		g.call(1, sec, true, statuscode.BizError)
	}
	assert.Equal(t, []int{1}, g.ejected())
}

// An ejection lasts the base time times the ejections in a row, capped;
// the provider comes back once it is over, on the first call after it;
// the count of ejections in a row goes down by one per interval back.
func TestEjectionTimeGrowsAndEnds(t *testing.T) {
	f := newFixture(t, 4, nil)
	f.fail(0, 1*sec, 5)
	require.Equal(t, []int{0}, f.ejected())
	dec := f.decide()

	f.call(1, 30*sec, false, 0)
	assert.False(t, f.stale(dec), "30 s after the ejection at 1 s it is not over")
	f.call(1, 31*sec, false, 0)
	assert.True(t, f.stale(dec), "the first call at its end wakes the detector")
	assert.Empty(t, f.ejected())
	assert.Contains(t, f.logs()[1], "provider 127.0.0.1:21000 returns after 30s of ejection (by the consecutive-failures rule)")

	f.fail(0, 32*sec, 5)
	assert.Equal(t, []int{0}, f.ejected())
	assert.Contains(t, f.logs()[2], "ejected for 1m0s (ejection 2 in a row)")
	f.call(1, 92*sec, false, 0)
	assert.Empty(t, f.ejected(), "back at 92 s")

	// 25 s back (two intervals of 10 s): 2 in a row less 2, so this one is
	// the first again.
	f.fail(0, 117*sec, 5)
	assert.Equal(t, []int{0}, f.ejected())
	assert.Contains(t, f.logs()[4], "ejected for 30s (ejection 1 in a row)")

	assert.Equal(t, 30*time.Second, EjectionTime(30*time.Second, 300*time.Second, 1))
	assert.Equal(t, 270*time.Second, EjectionTime(30*time.Second, 300*time.Second, 9))
	assert.Equal(t, 300*time.Second, EjectionTime(30*time.Second, 300*time.Second, 11))
	assert.Equal(t, 300*time.Second, EjectionTime(30*time.Second, 300*time.Second, 1<<62), "no overflow")
	assert.Equal(t, 30*time.Second, EjectionTime(30*time.Second, 10*time.Second, 3), "the cap is at least the base")
}

// At most max-ejection-percent of the providers are ejected at once, but
// always one may be; a provider over the limit is ejected once there is
// room.
func TestMaxEjected(t *testing.T) {
	f := newFixture(t, 10, nil) // 10 %: one provider
	f.fail(0, sec, 5)
	f.fail(1, sec, 5)
	assert.Equal(t, []int{0}, f.ejected())
	f.call(2, 31*sec, false, 0) // 0 comes back; 1 has kept its run
	assert.Equal(t, []int{1}, f.ejected())

	g := newFixture(t, 30, nil) // 10 % of 30: three
	for i := range 5 {
		g.fail(i, sec, 5)
	}
	assert.Equal(t, []int{0, 1, 2}, g.ejected())

	h := newFixture(t, 4, map[string]string{MaxEjectedKey: "50"})
	for i := range 4 {
		h.fail(i, sec, 5)
	}
	assert.Equal(t, []int{0, 1}, h.ejected())
}

// Below the panic threshold of usable providers ejection is ignored, and
// it applies again once enough are usable.
func TestPanicThreshold(t *testing.T) {
	f := newFixture(t, 4, map[string]string{MaxEjectedKey: "100", PanicKey: "50"})
	f.fail(0, sec, 5)
	f.fail(1, sec, 5)
	assert.Equal(t, []int{0, 1}, f.ejected(), "2 of 4 usable: 50 %, not below")
	f.fail(2, 2*sec, 5)
	dec := f.decide()
	assert.Nil(t, dec.Ejected, "1 of 4 usable: every provider serves")
	assert.True(t, dec.Panic, "and the decision says it is panic mode")
	panics := 0
	for _, l := range f.logs() {
		if strings.Contains(l, "panic threshold") {
			panics++
			assert.Contains(t, l, "3 of 4 providers ejected")
		}
	}
	assert.Equal(t, 1, panics, "one line when ejection starts being ignored")
	f.decide()
	assert.Len(t, f.logs(), 4, "and not again")

	f.call(3, 31*sec, false, 0) // 0 and 1 come back
	assert.Equal(t, []int{2}, f.ejected())
	assert.False(t, f.decide().Panic, "panic mode ends with enough providers usable")

	// With a threshold of 0, ejection is never ignored, but one provider
	// is always left.
	g := newFixture(t, 2, map[string]string{MaxEjectedKey: "100", PanicKey: "0"})
	g.fail(0, sec, 5)
	g.fail(1, sec, 5)
	assert.Nil(t, g.decide().Ejected, "no provider left: ignored")
}

// The failure-percentage rule looks at each interval: it ejects a
// provider that failed at least the threshold of at least request-volume
// calls, when enough providers had that many calls.
func TestFailurePercentageRule(t *testing.T) {
	params := map[string]string{RulesKey: "failure-percentage"}
	f := newFixture(t, 5, params)
	dec := f.decide()
	assert.Zero(t, f.d.Board().Raised())
	f.call(1, sec, false, 0) // the first call starts the interval clock
	assert.True(t, f.stale(dec))
	dec = f.decide()
	for i := range 5 {
		for k := range 60 {
			f.call(i, 2*sec, i == 0 && k < 52, rpcstatus.NoCode) // 86.7 % failed
		}
	}
	assert.False(t, f.stale(dec), "consecutive failures do not eject under this rule")
	assert.Empty(t, f.ejected())
	f.call(1, 11*sec, false, 0) // the interval ends
	assert.Equal(t, []int{0}, f.ejected())
	assert.Contains(t, f.logs()[0], "by the failure-percentage rule: 52 of 60 calls failed in 10s, 85% or more")

	// Four providers with enough calls are too few.
	g := newFixture(t, 5, params)
	g.call(1, sec, false, 0)
	g.decide()
	for i := range 4 {
		for k := range 60 {
			g.call(i, 2*sec, i == 0 && k < 55, rpcstatus.NoCode)
		}
	}
	g.call(4, 11*sec, false, 0)
	assert.Empty(t, g.ejected())
}

func TestSuccessRateRule(t *testing.T) {
	f := newFixture(t, 5, map[string]string{RulesKey: "success-rate, consecutive-failures"})
	f.call(1, sec, false, 0)
	f.decide()
	fails := []int{1, 2, 1, 0, 30} // of 120 calls each
	for i, n := range fails {
		for k := range 120 {
			// Spread, so the consecutive rule sees no run of 5.
			f.call(i, 2*sec, k%4 == 0 && k/4 < n, rpcstatus.NoCode)
		}
	}
	f.call(1, 11*sec, false, 0)
	assert.Equal(t, []int{4}, f.ejected())
	assert.Contains(t, f.logs()[0], "by the success-rate rule: success rate 75.0% in 10s")
}

func TestIntervalRulesPure(t *testing.T) {
	fp := DefaultConfig.FailurePercentage
	for _, c := range []struct {
		calls, fails []int64
		want         []int
	}{
		{[]int64{50, 50, 50, 50, 50}, []int64{43, 42, 0, 0, 0}, []int{0}}, // 86 %, 84 %
		{[]int64{50, 50, 50, 50, 49}, []int64{50, 0, 0, 0, 0}, nil},       // 4 hosts with 50 calls
		{[]int64{100, 100, 100, 100, 100, 10}, []int64{0, 0, 0, 0, 0, 10}, nil},
		{[]int64{100, 100, 100, 100, 100}, []int64{85, 100, 0, 0, 0}, []int{0, 1}},
	} {
		assert.Equal(t, c.want, fp.Eject(c.calls, c.fails), "%v %v", c.calls, c.fails)
	}
	sr := DefaultConfig.SuccessRate
	out, mean, threshold := sr.Eject([]int64{100, 100, 100, 100, 100}, []int64{0, 1, 0, 1, 20})
	assert.Equal(t, []int{4}, out)
	assert.InDelta(t, 0.956, mean, 1e-9)
	assert.Less(t, threshold, mean)
	out, _, _ = sr.Eject([]int64{100, 100, 100, 100, 99}, []int64{0, 0, 0, 0, 99})
	assert.Nil(t, out, "four providers with the request volume")
	out, _, _ = sr.Eject([]int64{100, 100, 100, 100, 100}, []int64{3, 3, 3, 3, 3})
	assert.Nil(t, out, "equal rates: no outlier")
}

// Ejection off (outlier.rules=none): no alarm, no ejection, and a
// provider ejected before comes back at once.
func TestRulesNone(t *testing.T) {
	f := newFixture(t, 3, map[string]string{RulesKey: "none"})
	dec := f.decide()
	assert.False(t, dec.Enabled)
	f.fail(0, sec, 50)
	assert.False(t, f.stale(dec))
	assert.Empty(t, f.ejected())
	assert.EqualValues(t, 50, f.stats[0].Streak(), "failures are still counted (fewestactive charges them)")
}

// A malformed configuration falls back to its defaults with one WARN line
// per (service, method), not one per snapshot.
func TestBadConfigurationOneLine(t *testing.T) {
	f := newFixture(t, 5, map[string]string{
		ConsecutiveKey:  "-3",
		BaseEjectionKey: "-10s",
		MaxEjectedKey:   "250",
		RulesKey:        "consecutive-failures,sometimes",
	})
	require.Len(t, f.logs(), 1)
	line := f.logs()[0]
	for _, want := range []string{"outlier.consecutive-failures \"-3\"", "using 5", "outlier.base-ejection-time \"-10s\"", "using 30s",
		"outlier.max-ejection-percent \"250\"", "using 10", "\"sometimes\""} {
		assert.Contains(t, line, want)
	}
	f.decide()
	f.d.Decide("Say", append([]base.Invoker(nil), f.list...), f.stats)
	assert.Len(t, f.logs(), 1)
	f.fail(2, sec, 5)
	assert.Equal(t, []int{2}, f.ejected(), "the defaults apply")
	assert.Contains(t, f.logs()[1], "ejected for 30s")
}

// The configuration is read per method, method level first.
func TestMethodLevelConfiguration(t *testing.T) {
	f := newFixture(t, 3, map[string]string{
		ConsecutiveKey:                    "50",
		"methods.Say." + ConsecutiveKey:   "2",
		"methods.Say." + BaseEjectionKey:  "1500ms",
		"methods.Other." + ConsecutiveKey: "9",
	})
	f.fail(1, sec, 2)
	assert.Equal(t, []int{1}, f.ejected())
	assert.Contains(t, f.logs()[0], "ejected for 1.5s")
}

func ExampleEjectionTime() {
	for times := int64(1); times <= 12; times += 5 {
		fmt.Println(EjectionTime(30*time.Second, 300*time.Second, times))
	}
	// Output:
	// 30s
	// 3m0s
	// 5m0s
}

// A run that reached the threshold before this detector's board was
// linked (under another balancer's) raises no alarm of its own: the
// detector asks to be woken by the first call, and ejects then, with the
// time of that call.
func TestRunFromAnotherBoard(t *testing.T) {
	f := newFixture(t, 3, nil)
	f.fail(1, 5*sec, 5)
	require.Equal(t, []int{1}, f.ejected())

	g := &fixture{t: t, list: f.list, stats: f.stats, d: new(Detector), logs: f.logs}
	var other rpcstatus.Board
	other.Configure(5, statuscode.DefaultCounted)
	for _, s := range f.stats {
		s.Link(&other)
	}
	f.fail(2, 6*sec, 5) // under the other board: raises its alarm, not g's
	assert.Empty(t, g.ejected(), "no time yet")
	dec := g.decide()
	f.call(0, 7*sec, false, 0)
	assert.True(t, g.stale(dec), "the first call wakes it")
	assert.Equal(t, []int{2}, g.ejected())
	assert.Contains(t, f.logs()[len(f.logs())-1], "127.0.0.1:21002 ejected for 30s")
}

// An ejection follows its provider through changes of the list: providers
// gone, come and moved, two gone side by side (where the walk over the
// previous list loses its place), and a list the caller changed in place.
func TestEjectionFollowsItsProviderThroughChanges(t *testing.T) {
	f := newFixture(t, 6, nil)
	f.fail(3, sec, 5)
	require.Equal(t, []int{3}, f.ejected())
	at := func(inv base.Invoker) []int {
		for i, p := range f.list {
			if p == inv {
				return []int{i}
			}
		}
		t.Fatal("the ejected provider is not in the list")
		return nil
	}
	orig, origStats, bad := f.list, f.stats, f.list[3]
	come := lbtest.Provider(21100, map[string]string{"weight": "100"})
	for _, change := range []struct {
		name string
		list []int // positions in the first list, -1: the newcomer
	}{
		{"one gone before it, one come first", []int{-1, 0, 2, 3, 4, 5}},
		{"moved to the front", []int{3, 0, 1, 2, 4, 5}},
		{"two gone side by side before it", []int{0, 3, 4, 5}},
		{"reversed", []int{5, 4, 3, 0, -1}},
	} {
		list := make([]base.Invoker, len(change.list))
		stats := make([]*rpcstatus.Stats, len(change.list))
		for i, j := range change.list {
			if j < 0 {
				list[i], stats[i] = come, rpcstatus.Of(come.GetURL()).Method("Say")
			} else {
				list[i], stats[i] = orig[j], origStats[j]
			}
		}
		f.list, f.stats = list, stats
		assert.Equal(t, at(bad), f.ejected(), change.name)
	}
	// The same slices, changed in place.
	f.list[0], f.list[1] = f.list[1], f.list[0]
	f.stats[0], f.stats[1] = f.stats[1], f.stats[0]
	assert.Equal(t, at(bad), f.ejected(), "swapped in place")
}
