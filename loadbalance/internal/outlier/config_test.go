package outlier

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/dubbogo-lb/lb/internal/statuscode"
	"github.com/dubbogo-lb/lb/loadbalance/internal/lbtest"
)

// year bounds a duration the configuration accepts.
const year = 365 * 24 * time.Hour

func TestParseConfig(t *testing.T) {
	parse := func(kv ...string) (Config, []string) {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return ParseConfig(func(k string) string { return m[k] })
	}
	o, problems := parse()
	assert.Equal(t, DefaultConfig, o)
	assert.Empty(t, problems)
	assert.True(t, o.Enabled())
	assert.False(t, o.Periodic())
	assert.EqualValues(t, 5, o.ConsecutiveFailures)

	o, problems = parse(RulesKey, " Failure-Percentage , success-rate", IntervalKey, "1500",
		MaxEjectedKey, "12.5%", SuccessRateStdevFactorKey, "2.5", ErrorsKey, "unknown, biz-error ,3")
	assert.Empty(t, problems)
	assert.Zero(t, o.ConsecutiveFailures, "not among the rules")
	assert.True(t, o.FailurePercentage.Enabled && o.SuccessRate.Enabled && o.Periodic())
	assert.Equal(t, 1500*time.Millisecond, o.Interval, "plain milliseconds, as Dubbo Java writes durations")
	assert.Equal(t, 12.5, o.MaxEjectionPercent)
	assert.Equal(t, 2.5, o.SuccessRate.StdevFactor)
	assert.Equal(t, statuscode.AlwaysCounted|1<<statuscode.Unknown|1<<statuscode.BizError|1<<3, o.Counted, "the list replaces the default codes")

	o, _ = parse(RulesKey, "none")
	assert.False(t, o.Enabled())
	o, _ = parse(ErrorsKey, "none")
	assert.Equal(t, statuscode.AlwaysCounted, o.Counted)
	o, _ = parse(ErrorsKey, "all")
	assert.Equal(t, statuscode.AllCounted, o.Counted)

	for _, c := range []struct {
		key, value, why string
	}{
		{ConsecutiveKey, "0", "using 5"},
		{ConsecutiveKey, "five", "using 5"},
		{IntervalKey, "-10s", "using 10s"},
		{BaseEjectionKey, "0", "using 30s"},
		{MaxEjectionKey, "2y", "using 5m0s"},
		{MaxEjectedKey, "101", "using 10"},
		{PanicKey, "NaN", "using 50"},
		{FailurePercentThresholdKey, "-1%", "using 85"},
		{SuccessRateStdevFactorKey, "0", "using 1.9"},
		{SuccessRateRequestVolumeKey, "1.5", "using 100"},
		{RulesKey, "all", "using consecutive-failures"},
		{RulesKey, "none,success-rate", "using none"},
		{ErrorsKey, "internal,oops", `skipped "oops"`},
	} {
		o, problems := parse(c.key, c.value)
		if assert.Len(t, problems, 1, "%s=%s", c.key, c.value) {
			assert.Contains(t, problems[0], c.key+" "+strconv.Quote(c.value))
			assert.Contains(t, problems[0], c.why)
		}
		if c.key == ErrorsKey {
			assert.Equal(t, statuscode.AlwaysCounted|1<<statuscode.Internal, o.Counted)
		} else if c.key != RulesKey || c.value == "all" {
			assert.Equal(t, DefaultConfig, o, "%s=%s: the default stays", c.key, c.value)
		}
	}
}

// FuzzParseConfig checks the outlier configuration: whatever the values,
// every field stays in its range, the failures that always count do, a
// replaced value is reported on one line, and nothing panics. num goes to
// every count and percentage, dur to every duration.
func FuzzParseConfig(f *testing.F) {
	for _, s := range [][4]string{
		{"", "", "", ""},
		{"consecutive-failures", "internal,biz_error", "5", "30s"},
		{"none", "all", "100", "10000"},
		{"success-rate,failure-percentage", "none", "85%", "1h"},
		{"none,success-rate", "17, 2 ,code_3", "-1", "-5s"},
		{"sometimes", "unknown,BIZ-ERROR,99", "1e999", "9999999999999999"},
		{",,", "0", "NaN", "0"},
		{"CONSECUTIVE-FAILURES", "31", "1099511627777", "8761h"},
	} {
		f.Add(s[0], s[1], s[2], s[3])
	}
	f.Fuzz(func(t *testing.T, rules, errs, num, dur string) {
		values := map[string]string{RulesKey: rules, ErrorsKey: errs}
		for _, k := range []string{ConsecutiveKey, MaxEjectedKey, PanicKey,
			FailurePercentThresholdKey, FailurePercentMinimumHostsKey, FailurePercentRequestVolumeKey,
			SuccessRateStdevFactorKey, SuccessRateMinimumHostsKey, SuccessRateRequestVolumeKey} {
			values[k] = num
		}
		for _, k := range []string{IntervalKey, BaseEjectionKey, MaxEjectionKey} {
			values[k] = dur
		}
		o, problems := ParseConfig(func(k string) string { return values[k] })
		fail := func(what string) { t.Fatalf("%s: %+v (problems %q)", what, o, problems) }
		if o.ConsecutiveFailures < 0 || o.ConsecutiveFailures > maxCount {
			fail("consecutive failures out of range")
		}
		for _, n := range []int64{o.FailurePercentage.MinimumHosts, o.FailurePercentage.RequestVolume, o.SuccessRate.MinimumHosts, o.SuccessRate.RequestVolume} {
			if n < 1 || n > maxCount {
				fail("count out of range")
			}
		}
		for _, p := range []float64{o.MaxEjectionPercent, o.PanicThreshold, o.FailurePercentage.Threshold} {
			if !(p >= 0 && p <= 100) {
				fail("percentage out of range")
			}
		}
		if !(o.SuccessRate.StdevFactor > 0 && o.SuccessRate.StdevFactor <= 1000) {
			fail("stdev factor out of range")
		}
		for _, d := range []time.Duration{o.Interval, o.BaseEjectionTime, o.MaxEjectionTime} {
			if d <= 0 || d > year {
				fail("duration out of range")
			}
		}
		if o.Counted&statuscode.AlwaysCounted != statuscode.AlwaysCounted {
			fail("a failure that always counts does not")
		}
		for _, p := range problems {
			if strings.ContainsAny(p, "\r\n") || p == "" {
				fail("a problem that is not one line")
			}
		}
		// Each value blank on its own: blank pieces can join into a
		// multi-byte space ("\xe1", "\x9a", "\x80" are U+1680's bytes).
		blank := func(s string) bool { return strings.TrimSpace(s) == "" }
		if blank(rules) && blank(errs) && blank(num) && blank(dur) && (o != DefaultConfig || len(problems) > 0) {
			fail("unset values are not the defaults")
		}
	})
}

// The configuration is the consumer's: the outlier keys a hostile provider
// registers (lbtest.HostileParams: ejection off at every level) are never
// read, and the consumer's own values win.
func TestReadConfigTakesTheConsumers(t *testing.T) {
	hostile := lbtest.HostileParams
	for _, k := range []string{RulesKey, "methods.Say." + RulesKey, "Say." + RulesKey, ConsecutiveKey, MaxEjectedKey} {
		assert.Contains(t, hostile, k, "lbtest spells the keys as this package does")
	}
	o, problems := ReadConfig(lbtest.Hostile(21900, hostile, nil).GetURL(), "Say")
	assert.Empty(t, problems)
	assert.Equal(t, DefaultConfig, o, "the provider turned ejection off")

	u := lbtest.Hostile(21901, hostile, map[string]string{RulesKey: "failure-percentage", "methods.Say." + ConsecutiveKey: "7"}).GetURL()
	o, _ = ReadConfig(u, "Say")
	assert.True(t, o.FailurePercentage.Enabled)
	assert.Zero(t, o.ConsecutiveFailures, "consecutive-failures is not among the consumer's rules")
	u = lbtest.Hostile(21902, hostile, map[string]string{"methods.Say." + ConsecutiveKey: "7"}).GetURL()
	o, _ = ReadConfig(u, "Say")
	assert.EqualValues(t, 7, o.ConsecutiveFailures, "the consumer's method level")
}
