package warmup

import (
	"math"
	"strings"
	"testing"
	"time"
)

// FuzzParseWeight checks the weight policy on any raw parameter: a weight
// in [0, maxWeight], DefaultWeight with a reason whenever the value is
// rejected, and never a panic.
func FuzzParseWeight(f *testing.F) {
	for _, s := range []string{"", "100", " 7.5 ", "0", "0.4", "-1", "NaN", "Inf", "1e7", "1e400", "0x10", "abc", "1_000"} {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, raw string, zeroMeansUnset bool) {
		w, problem := parseWeight(raw, zeroMeansUnset)
		if math.IsNaN(w) || w < 0 || w > maxWeight {
			t.Fatalf("parseWeight(%q) = %v, outside [0, %v]", raw, w, maxWeight)
		}
		if problem != "" && w != DefaultWeight {
			t.Fatalf("parseWeight(%q) rejected the value (%s) but returned %v, not the default", raw, problem, w)
		}
		if strings.TrimSpace(raw) == "" && (w != DefaultWeight || problem != "") {
			t.Fatalf("parseWeight(%q) = %v, %q; want the default, silently", raw, w, problem)
		}
		if w == 0 && (zeroMeansUnset || problem != "") {
			t.Fatalf("parseWeight(%q, %v) = 0", raw, zeroMeansUnset)
		}
	})
}

// FuzzParseAge checks timestamp and warmup parsing at any clock: a start
// never after now, a period in [0, one year], and the warm weight a
// balancer derives from them finite and within [min(1, weight), weight].
func FuzzParseAge(f *testing.F) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).UnixNano()
	for _, s := range [][2]string{
		{"", ""}, {"1767322000", "600"}, {"1767322000000", "600"}, {"99999999999", "1"},
		{"1767322000", "-5"}, {"1767322000", "NaN"}, {"1767322000", "1e30"}, {"abc", "10"},
		{"-1", "10"}, {"9223372036854775807", "0"}, {"1767322000", "0.5"}, {"1767322000", "Inf"},
	} {
		f.Add(s[0], s[1], now, 100.0)
	}
	f.Fuzz(func(t *testing.T, timestamp, warmup string, nowNs int64, weight float64) {
		at := time.Unix(0, nowNs)
		start, period, _ := parseAge(timestamp, warmup, at)
		if start.After(at) {
			t.Fatalf("parseAge(%q, %q) start %v after now %v", timestamp, warmup, start, at)
		}
		if period < 0 || period > 365*24*time.Hour {
			t.Fatalf("parseAge(%q, %q) period %v outside [0, 1 year]", timestamp, warmup, period)
		}
		if math.IsNaN(weight) || weight < 0 || weight > maxWeight {
			return // ParseWeight never gives such a weight
		}
		m := Meta{Weight: weight, Start: start, Period: period}
		for _, later := range []time.Duration{0, time.Second, period / 2, period} {
			w := Options{}.WithDefaults().Weight(m, at.Add(later))
			if math.IsNaN(w) || w > weight || w < min(1, weight) {
				t.Fatalf("warm weight %v of %v at +%v (start %v, period %v)", w, weight, later, start, period)
			}
		}
	})
}

// FuzzParseFactor checks the weight factor on any raw parameter: finite and
// never negative, 1 with a reason whenever the value is rejected, 1 silently
// when absent, and never a panic.
func FuzzParseFactor(f *testing.F) {
	for _, s := range []string{"", "1", " 0.505 ", "0", "-0", "-1", "NaN", "Inf", "1e400", "0x10", "abc"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		v, problem := ParseFactor(raw)
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			t.Fatalf("ParseFactor(%q) = %v", raw, v)
		}
		if problem != "" && v != 1 {
			t.Fatalf("ParseFactor(%q) rejected the value (%s) but returned %v", raw, problem, v)
		}
		if strings.TrimSpace(raw) == "" && (v != 1 || problem != "") {
			t.Fatalf("ParseFactor(%q) = %v, %q; want 1, silently", raw, v, problem)
		}
	})
}
