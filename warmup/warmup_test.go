package warmup

import (
	"math"
	"strconv"
	"testing"
	"time"

	"dubbo.apache.org/dubbo-go/v3/common"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var now = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func TestParseWeightPolicy(t *testing.T) {
	before := InvalidWeights.Load()
	for _, c := range []struct {
		raw       string
		goZero    bool
		want      float64
		wantError bool
	}{
		{"", false, 100, false},
		{"  ", false, 100, false},
		{"250", false, 250, false},
		{"0.4", false, 0.4, false}, // never rounded to 0 or to 100
		{"2.5", false, 2.5, false},
		{"0", false, 0, false},  // drained
		{"0", true, 100, false}, // dubbo-go writes 0 when no weight is set
		{"1e6", false, 1e6, false},
		{"abc", false, 100, true},
		{"-5", false, 100, true},
		{"1e99", false, 100, true},
		{"1e400", false, 100, true},
		{"NaN", false, 100, true},
		{"Inf", false, 100, true},
		{"-Inf", false, 100, true},
		{"0x10", false, 100, true},
	} {
		w, problem := parseWeight(c.raw, c.goZero)
		assert.Equal(t, c.want, w, "weight %q", c.raw)
		if c.wantError {
			assert.NotEmpty(t, problem, "weight %q must say why it was replaced", c.raw)
			assert.Contains(t, problem, strconv.Quote(c.raw))
		} else {
			assert.Empty(t, problem, "weight %q", c.raw)
		}
	}
	assert.EqualValues(t, 8, InvalidWeights.Load()-before, "each invalid weight is counted")
}

func TestParseAgeUnits(t *testing.T) {
	// dubbo-go: seconds and a warmup in seconds.
	start, period, problem := parseAge(strconv.FormatInt(now.Add(-time.Minute).Unix(), 10), "600", now)
	assert.WithinDuration(t, now.Add(-time.Minute), start, 0)
	assert.Equal(t, 10*time.Minute, period)
	assert.Empty(t, problem)
	// Dubbo Java: milliseconds and a warmup in milliseconds.
	start, period, _ = parseAge(strconv.FormatInt(now.Add(-time.Minute).UnixMilli(), 10), "600000", now)
	assert.WithinDuration(t, now.Add(-time.Minute), start, 0)
	assert.Equal(t, 10*time.Minute, period)
	// No warmup parameter: Dubbo's default.
	_, period, _ = parseAge(strconv.FormatInt(now.Unix(), 10), "", now)
	assert.Equal(t, defaultPeriod, period)
	// Garbage: treated as warm, with a reason.
	start, _, problem = parseAge("yesterday", "", now)
	assert.True(t, start.IsZero())
	assert.Contains(t, problem, "yesterday")
	start, _, problem = parseAge("", "", now)
	assert.True(t, start.IsZero())
	assert.Empty(t, problem)
	_, period, problem = parseAge(strconv.FormatInt(now.Unix(), 10), "-3", now)
	assert.Equal(t, defaultPeriod, period)
	assert.NotEmpty(t, problem)
}

func TestFutureTimestampRampsFromFirstSight(t *testing.T) {
	future := now.Add(time.Hour)
	start, _, problem := parseAge(strconv.FormatInt(future.Unix(), 10), "600", now)
	assert.WithinDuration(t, now, start, 0, "clock skew: warming up from when it was first seen")
	assert.Contains(t, problem, "future")
	m := Meta{Weight: 100, Start: start, Period: 10 * time.Minute}
	var o Options
	assert.Equal(t, 1.0, o.Weight(m, now), "just started: the floor, never 0")
	assert.InDelta(t, 50, o.Weight(m, now.Add(5*time.Minute)), 1e-9)
	assert.Equal(t, 100.0, o.Weight(m, now.Add(10*time.Minute)), "bounded: warm after one period")
}

func TestLinearRampAtSeveralUptimes(t *testing.T) {
	var o Options
	m := Meta{Weight: 100, Start: now, Period: 600 * time.Second}
	for _, c := range []struct {
		uptime time.Duration
		want   float64
	}{
		{0, 1}, {3 * time.Second, 1}, {60 * time.Second, 10}, {300 * time.Second, 50},
		{599 * time.Second, 100 * 599.0 / 600}, {600 * time.Second, 100}, {time.Hour, 100},
	} {
		assert.InDelta(t, c.want, o.Weight(m, now.Add(c.uptime)), 1e-9, "uptime %v", c.uptime)
	}
	// A small weight keeps its own value as the floor, not 1.
	assert.Equal(t, 0.5, o.Weight(Meta{Weight: 0.5, Start: now, Period: time.Minute}, now))
	// Drained and unknown start.
	assert.Equal(t, 0.0, o.Weight(Meta{Weight: 0, Start: now, Period: time.Minute}, now))
	assert.Equal(t, 100.0, o.Weight(Meta{Weight: 100}, now))
}

func TestAggressionAndMinPercent(t *testing.T) {
	m := Meta{Weight: 100, Start: now, Period: 100 * time.Second}
	at := now.Add(25 * time.Second)
	assert.InDelta(t, 50, Options{Aggression: 2}.Weight(m, at), 1e-9, "(0.25)^(1/2)")
	assert.InDelta(t, 25, Options{Aggression: 1}.Weight(m, at), 1e-9)
	assert.InDelta(t, 25, Options{Aggression: math.NaN()}.Weight(m, at), 1e-9, "bad aggression is linear")
	assert.InDelta(t, 40, Options{MinPercent: 40}.Weight(m, at), 1e-9)
	assert.InDelta(t, 25, Options{MinPercent: math.NaN()}.Weight(m, at), 1e-9)
	assert.InDelta(t, 100, Options{MinPercent: 500}.Weight(m, at), 1e-9)
}

// dubbo-go's own warmup reads remote.timestamp, which URL.MergeURL never
// fills for a provider that has a timestamp. Ours reads the provider URL
// exactly as the consumer holds it after the merge.
func TestParseAfterMergeURL(t *testing.T) {
	started := now.Add(-60 * time.Second)
	provider, err := common.NewURL("tri://127.0.0.1:20000/svc.Greeter?interface=svc.Greeter&release=dubbo-golang-3.3.2&weight=0&warmup=600&timestamp=" +
		strconv.FormatInt(started.Unix(), 10) + "&methods.Say.weight=200")
	require.NoError(t, err)
	consumer, err := common.NewURL("consumer://127.0.0.1/svc.Greeter?interface=svc.Greeter&loadbalance=warmrandom&timestamp=" +
		strconv.FormatInt(now.Unix(), 10))
	require.NoError(t, err)
	merged := provider.MergeURL(consumer)
	require.Empty(t, merged.GetParam("remote.timestamp", ""), "the field dubbo-go's warmup reads is empty")

	m := Parse(merged, "", now)
	assert.Equal(t, 100.0, m.Weight, "dubbo-go's weight=0 means unset")
	assert.WithinDuration(t, started, m.Start, 0)
	assert.Equal(t, 10*time.Minute, m.Period)
	assert.InDelta(t, 10, Options{}.Weight(m, now), 1e-9, "60 s of a 600 s warmup")

	m = Parse(merged, "Say", now)
	assert.Equal(t, 200.0, m.Weight, "method-level weight first")
	assert.WithinDuration(t, started.Add(10*time.Minute), m.WarmAt(), 0)
}

func TestParseJavaProviderZeroMeansDrained(t *testing.T) {
	u, err := common.NewURL("dubbo://127.0.0.1:20880/svc.Greeter?release=3.2.15&weight=0")
	require.NoError(t, err)
	assert.Equal(t, 0.0, Parse(u, "", now).Weight)
}

// A Java provider's method-level weight is spelled <method>.weight.
func TestParseJavaMethodLevelWeight(t *testing.T) {
	started := now.Add(-60 * time.Second)
	u, err := common.NewURL("dubbo://10.0.0.7:20880/svc.Greeter?methods=Say,Bye&release=3.3.6&weight=100&Say.weight=300&warmup=600000&timestamp=" +
		strconv.FormatInt(started.UnixMilli(), 10))
	require.NoError(t, err)
	m := Parse(u, "Say", now)
	assert.Equal(t, 300.0, m.Weight)
	assert.InDelta(t, 30, Options{}.Weight(m, now), 1e-9, "60 s of a 600 s warmup")
	assert.Equal(t, 100.0, Parse(u, "Bye", now).Weight)
	assert.Equal(t, 100.0, Parse(u, "", now).Weight)
}

// The Nacos discovery's weight factor scales the weight at every level:
// fractions exactly, 0 drains even a dubbo-go provider (whose weight 0
// means unset), a bad factor keeps the weight and says why. Every case
// reads method Say: its own weight where the URL sets one, else the
// service's.
func TestParseWeightFactor(t *testing.T) {
	for _, c := range []struct {
		query      string
		want       float64
		wantReason string
	}{
		{"release=dubbo-golang-3.3.2&weight=100", 100, ""},
		{"release=dubbo-golang-3.3.2&weight=100&lb.weight.factor=0.505", 50.5, ""},
		{"release=dubbo-golang-3.3.2&weight=100&lb.weight.factor=2", 200, ""},
		{"release=dubbo-golang-3.3.2&weight=0&lb.weight.factor=0", 0, ""}, // drained, not "unset"
		{"release=dubbo-golang-3.3.2&lb.weight.factor=3", 300, ""},        // default weight × 3
		{"release=3.3.6&weight=100&Say.weight=300&lb.weight.factor=1.5", 450, ""},
		{"release=dubbo-golang-3.3.2&weight=100&methods.Say.weight=10&lb.weight.factor=0.25", 2.5, ""},
		{"weight=1000000&lb.weight.factor=10", maxWeight, ""},
		{"weight=100&lb.weight.factor=-1", 100, `"-1"`},
		{"weight=100&lb.weight.factor=NaN", 100, `"NaN"`},
		{"weight=100&lb.weight.factor=x", 100, `"x"`},
	} {
		u, err := common.NewURL("tri://127.0.0.1:20001/svc.Greeter?" + c.query)
		require.NoError(t, err)
		m := Parse(u, "Say", now)
		assert.Equal(t, c.want, m.Weight, c.query)
		if c.wantReason == "" {
			assert.Empty(t, m.Problem, c.query)
		} else {
			assert.Contains(t, m.Problem, c.wantReason, c.query)
		}
	}
}
