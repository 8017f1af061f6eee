package urlparam

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// FuzzParseTimeout checks method timeouts: a valid one is positive and at
// most maxTimeout; anything else is refused, never a panic.
func FuzzParseTimeout(f *testing.F) {
	for _, s := range []string{"", "3s", "500ms", "3000", " 10 ", "-1s", "0", "1e3", "9999999999999999", "1h1m", "abc", "2562047h"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		d, ok := parseTimeout(raw)
		if ok != (d > 0) {
			t.Fatalf("parseTimeout(%q) = %v, %v", raw, d, ok)
		}
		if d > maxTimeout {
			t.Fatalf("parseTimeout(%q) = %v, above the %v cap", raw, d, maxTimeout)
		}
		if !ok && d != 0 {
			t.Fatalf("parseTimeout(%q) refused the value but returned %v", raw, d)
		}
	})
}

// FuzzParseActives checks the actives parameter: a limit only from a
// positive integer, no limit (0) from anything else, never a panic.
func FuzzParseActives(f *testing.F) {
	for _, s := range []string{"", "1", " 8 ", "0", "-3", "abc", "1.5", "9223372036854775807", "9223372036854775808", "+2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		n := ParseActives(raw)
		if n < 0 {
			t.Fatalf("ParseActives(%q) = %d", raw, n)
		}
		v, err := strconv.ParseInt(strings.TrimSpace(raw), 10, 64)
		if want := max(v, 0); err == nil && n != want || err != nil && n != 0 {
			t.Fatalf("ParseActives(%q) = %d", raw, n)
		}
	})
}

// FuzzParseOutlier checks the outlier configuration: whatever the values,
// every field stays in its range, the failures that always count do, a
// replaced value is reported on one line, and nothing panics. num goes to
// every count and percentage, dur to every duration.
func FuzzParseOutlier(f *testing.F) {
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
		values := map[string]string{OutlierRulesKey: rules, OutlierErrorsKey: errs}
		for _, k := range []string{OutlierConsecutiveKey, OutlierMaxEjectedKey, OutlierPanicKey,
			OutlierFailurePercentThresholdKey, OutlierFailurePercentMinimumHostsKey, OutlierFailurePercentRequestVolumeKey,
			OutlierSuccessRateStdevFactorKey, OutlierSuccessRateMinimumHostsKey, OutlierSuccessRateRequestVolumeKey} {
			values[k] = num
		}
		for _, k := range []string{OutlierIntervalKey, OutlierBaseEjectionKey, OutlierMaxEjectionKey} {
			values[k] = dur
		}
		o, problems := ParseOutlier(func(k string) string { return values[k] })
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
			if d <= 0 || d > maxTimeout {
				fail("duration out of range")
			}
		}
		if o.Counted&AlwaysCounted != AlwaysCounted {
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
		if blank(rules) && blank(errs) && blank(num) && blank(dur) && (o != DefaultOutlier || len(problems) > 0) {
			fail("unset values are not the defaults")
		}
	})
}

// FuzzParseNacosRetry checks nacos.retry and nacos.retry-wait: whatever the
// values, the tries and the wait stay in range, a value that is not used
// as given is reported, and nothing panics.
func FuzzParseNacosRetry(f *testing.F) {
	for _, s := range [][2]string{{"", ""}, {"3", "1500"}, {"-1", "soon"}, {"1000000", "60001"}, {" 2", "9e9"}, {"0", "0"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, retry, wait string) {
		r, problems := ParseNacosRetry(func(key string) string {
			return map[string]string{NacosRetryKey: retry, NacosRetryWaitKey: wait}[key]
		})
		if r.Tries < 0 || r.Tries > maxNacosRetries || r.Wait < 0 || r.Wait > maxNacosRetryWait {
			t.Fatalf("ParseNacosRetry(%q, %q) = %+v: out of range", retry, wait, r)
		}
		n, err := strconv.Atoi(retry)
		asGiven := retry == "" || err == nil && n == r.Tries
		ms, err := strconv.Atoi(wait)
		asGiven = asGiven && (wait == "" || err == nil && ms >= 0 && ms <= 60_000 && time.Duration(ms)*time.Millisecond == r.Wait)
		if asGiven != (len(problems) == 0) {
			t.Fatalf("ParseNacosRetry(%q, %q) = %+v with problems %q", retry, wait, r, problems)
		}
	})
}
