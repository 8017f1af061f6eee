package ringhash

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

type userID string

type level int

type named struct{ A int }

type stringer struct{ s string }

func (s *stringer) String() string { return s.s }

// Each expected string is what Java's String.valueOf prints for the
// corresponding Java value (Double.toString / Float.toString for floats).
func TestAppendJava(t *testing.T) {
	n := 7
	var nilPtr *int
	var nilStringer *stringer
	for _, c := range []struct {
		v    any
		want string
	}{
		{nil, "null"},
		{"", ""},
		{"héllo", "héllo"},
		{true, "true"},
		{false, "false"},
		{42, "42"},
		{int8(-128), "-128"},
		{int16(-3), "-3"},
		{int32(7), "7"},
		{int64(math.MinInt64), "-9223372036854775808"},
		{uint8(255), "255"},
		{uint64(math.MaxUint64), "18446744073709551615"},
		{1.0, "1.0"},
		{100.0, "100.0"},
		{1.5, "1.5"},
		{0.1, "0.1"},
		{-2.25, "-2.25"},
		{123456.789, "123456.789"},
		{9999999.0, "9999999.0"},
		{1e7, "1.0E7"},
		{1.25e7, "1.25E7"},
		{0.001, "0.001"},
		{0.00123, "0.00123"},
		{1e-4, "1.0E-4"},
		{1.0e21, "1.0E21"},
		{-1.5e-10, "-1.5E-10"},
		{math.MaxFloat64, "1.7976931348623157E308"},
		{math.SmallestNonzeroFloat64, "4.9E-324"},
		{2 * math.SmallestNonzeroFloat64, "9.9E-324"},
		{float32(math.SmallestNonzeroFloat32), "1.4E-45"},
		{1e23, "1.0E23"},
		{2e-3, "0.002"},
		{1234567.0, "1234567.0"},
		{12345678.0, "1.2345678E7"},
		{0.0, "0.0"},
		{math.Copysign(0, -1), "-0.0"},
		{math.NaN(), "NaN"},
		{math.Inf(1), "Infinity"},
		{math.Inf(-1), "-Infinity"},
		{float32(2.5), "2.5"},
		{float32(0.1), "0.1"},
		{float32(1e10), "1.0E10"},
		{float32(math.MaxFloat32), "3.4028235E38"},
		{float32(3.0), "3.0"},
		{&n, "7"},
		{nilPtr, "null"},
		{nilStringer, "null"},
		{&stringer{"s!"}, "s!"},
		{userID("u-1"), "u-1"},
		{level(3), "3"},
		{time.Second, "1s"},
		{named{A: 1}, "{1}"},
	} {
		assert.Equal(t, c.want, string(AppendJava([]byte("x"), c.v))[1:], "%T %v", c.v, c.v)
	}
}

func TestAppendJavaBasicDoesNotAllocate(t *testing.T) {
	buf := make([]byte, 0, 64)
	for _, v := range []any{"abc", 12345, int64(-9), true, 1.0e21, float32(0.1), nil} {
		allocs := testing.AllocsPerRun(100, func() { buf = AppendJava(buf[:0], v) })
		assert.Zero(t, allocs, "%T", v)
	}
}

// Values that JDK 17 and older print with other digits than JDK 19 and
// later; ours are JDK 19+'s. Both columns were printed by Double.toString /
// Float.toString of the JDK 17.0.15 and 25.0.3 installed on the development
// machine (see testdata/README.md).
func TestAppendJavaFloatsAreJDK19Forms(t *testing.T) {
	for _, c := range []struct {
		v            any
		jdk17, jdk19 string
	}{
		{math.Float64frombits(0x44b52d02c7e14af6), "9.999999999999999E22", "1.0E23"},
		{math.Float64frombits(0x43730429af9d3afe), "8.5641626303836128E16", "8.564162630383613E16"},
		{math.Float64frombits(0x43a83f1e37bf4b6c), "8.7357420261223373E17", "8.735742026122337E17"},
		{math.Float32frombits(0x5a1d435e), "1.10664106E16", "1.1066411E16"},
		{math.Float32frombits(0x5195052f), "8.0004637E10", "8.000464E10"},
		{math.Float32frombits(0x4ceb79a3), "1.23456792E8", "1.2345679E8"},
		// The same on both.
		{math.Float64frombits(0x437b69b4ba630f35), "1.2345678901234568E17", "1.2345678901234568E17"},
		{math.Float32frombits(0x4c000000), "3.3554432E7", "3.3554432E7"},
	} {
		assert.Equal(t, c.jdk19, string(AppendJava(nil, c.v)), "JDK 17: %s", c.jdk17)
	}
}
