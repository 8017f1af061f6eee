package loadreport

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Dubbo Java 3.3's ProfilerServerFilter writes
// "curTime:" + System.currentTimeMillis() + ",load:" + loadAverage*100/cpus,
// the load a Java double printed by StringBuilder.append(double).
func TestParseJavaFormat(t *testing.T) {
	java := HasTime | HasJavaLoad
	for _, tc := range []struct {
		in   string
		want Report
	}{
		{"curTime:1764560000123,load:37.5", Report{TimeMs: 1764560000123, JavaLoad: 37.5, Has: java}},
		{"curTime:1764560000123,load:1.0E-4", Report{TimeMs: 1764560000123, JavaLoad: 1e-4, Has: java}},
		{"curTime:1764560000123,load:112.25", Report{TimeMs: 1764560000123, JavaLoad: 112.25, Has: java}},
		// No load average on the platform: -1 × 100 / CPUs, dropped.
		{"curTime:1764560000123,load:-12.5", Report{TimeMs: 1764560000123, Has: HasTime}},
		{"load:NaN,curTime:x", Report{}},
		{"load:Infinity", Report{}},
		{"", Report{}},
		{"curTime:,load:", Report{}},
		{" curTime : 5 , load : 2 ", Report{TimeMs: 5, JavaLoad: 2, Has: java}},
	} {
		var r Report
		assert.Equal(t, tc.want.Has, Parse(tc.in, &r), tc.in)
		assert.Equal(t, tc.want, r, tc.in)
	}
}

func TestOwnRoundTrip(t *testing.T) {
	in := Report{TimeMs: 1764560000123, CPU: 0.523456, Inflight: 12.5, Capacity: 200, QPS: 1234.5, EPS: 0.25, Has: Own | HasTime}
	s := string(AppendOwn(nil, &in))
	assert.Equal(t, "cpu:0.5235,inflight:12.5,cap:200,qps:1234.5,eps:0.25,t:1764560000123", s)
	var out Report
	require.Equal(t, Own|HasTime, Parse(s, &out))
	in.CPU = 0.5235
	assert.Equal(t, in, out)

	j := Report{TimeMs: 42, JavaLoad: 37.5}
	assert.Equal(t, "curTime:42,load:37.5", string(AppendJava(nil, &j)))
	// One report from both attachments.
	require.Equal(t, HasTime|HasJavaLoad, Parse("curTime:43,load:37.5", &out))
	assert.Equal(t, int64(43), out.TimeMs)
	assert.Equal(t, Own|HasTime|HasJavaLoad, out.Has)
}

func TestParseRejectsMalformed(t *testing.T) {
	var r Report
	assert.Equal(t, Field(0), Parse("inflight:-1,cap:abc,eps:0x10,t:-5,t:99999999999999999999,qps:1e308,load:-Infinity", &r))
	assert.Equal(t, Report{}, r)
	assert.Equal(t, HasCPU, Parse("cpu:1,unknown:3,:,,x", &r))
	assert.Equal(t, 1.0, r.CPU)
}

// Every float field is clamped into its range, and Clamped says which
// were; a value in range is kept as sent.
func TestParseClamps(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    Report
		clamped Field
	}{
		{"cpu:1.5", Report{CPU: 1, Has: HasCPU}, HasCPU},
		{"cpu:1", Report{CPU: 1, Has: HasCPU}, 0},
		{"cpu:0.0001", Report{CPU: 1e-4, Has: HasCPU}, 0},
		{"cpu:1e-99", Report{Has: HasCPU}, HasCPU},
		{"cap:1e-99", Report{Has: HasCapacity}, HasCapacity},
		{"cap:0", Report{Has: HasCapacity}, 0},
		{"qps:1e-5", Report{Has: HasQPS}, HasQPS},
		{"qps:1e13", Report{QPS: MaxValue, Has: HasQPS}, HasQPS},
		{"eps:1e12", Report{EPS: MaxValue, Has: HasEPS}, HasEPS},
		{"eps:1e9", Report{EPS: 1e9, Has: HasEPS}, 0},
		{"inflight:9e99", Report{Inflight: MaxValue, Has: HasInflight}, HasInflight},
		{"load:5e10", Report{JavaLoad: MaxValue, Has: HasJavaLoad}, HasJavaLoad},
		{"load:1.0E-5", Report{Has: HasJavaLoad}, HasJavaLoad},
		// The hostile report that once made a cost infinite.
		{"cpu:1e-99,cap:1e-99,qps:1e-99,eps:1e12", Report{EPS: MaxValue, Has: HasCPU | HasCapacity | HasQPS | HasEPS},
			HasCPU | HasCapacity | HasQPS | HasEPS},
		// A later value of a field replaces an earlier one, clamp included.
		{"cpu:7,cpu:0.5", Report{CPU: 0.5, Has: HasCPU}, 0},
		{"cpu:0.5,cpu:7", Report{CPU: 1, Has: HasCPU}, HasCPU},
	} {
		var r Report
		Parse(tc.in, &r)
		assert.Equal(t, tc.clamped, r.Clamped, tc.in)
		r.Clamped = 0
		assert.Equal(t, tc.want, r, tc.in)
	}
	// A field read again in range is no longer clamped; others stay.
	var r Report
	Parse("cpu:2,qps:1e20", &r)
	Parse("cpu:0.5", &r)
	assert.Equal(t, HasQPS, r.Clamped)
}

// A report time ahead of the consumer's clock reads as now; more than
// MaxSkew ahead it counts as clamped.
func TestNotAfter(t *testing.T) {
	const now = 1_764_560_000_000
	skew := MaxSkew.Milliseconds()
	for _, tc := range []struct {
		name string
		in   Report
		want Report
	}{
		{"past", Report{TimeMs: now - 5000, Has: HasTime}, Report{TimeMs: now - 5000, Has: HasTime}},
		{"now", Report{TimeMs: now, Has: HasTime}, Report{TimeMs: now, Has: HasTime}},
		{"ahead within the skew", Report{TimeMs: now + skew, Has: HasTime}, Report{TimeMs: now, Has: HasTime}},
		{"ahead beyond the skew", Report{TimeMs: now + skew + 1, Has: HasTime}, Report{TimeMs: now, Has: HasTime, Clamped: HasTime}},
		{"far future", Report{TimeMs: 999_999_999_999_999_999, Has: HasTime}, Report{TimeMs: now, Has: HasTime, Clamped: HasTime}},
		{"no time", Report{TimeMs: now + 2*skew}, Report{TimeMs: now + 2*skew}},
	} {
		r := tc.in
		r.NotAfter(now)
		assert.Equal(t, tc.want, r, tc.name)
	}
}

func TestFieldString(t *testing.T) {
	assert.Equal(t, "", Field(0).String())
	assert.Equal(t, "t,load,cpu,inflight,cap,qps,eps", (Own | HasTime | HasJavaLoad).String())
	assert.Equal(t, "cpu,eps", (HasCPU | HasEPS).String())
}

func TestParseAllocatesNothing(t *testing.T) {
	s := "cpu:0.5235,inflight:12.5,cap:200,qps:1234.5,eps:0.25,t:1764560000123"
	var r Report
	assert.Zero(t, testing.AllocsPerRun(100, func() { Parse(s, &r); Parse("curTime:1764560000123,load:37.5", &r) }))
	assert.Zero(t, testing.AllocsPerRun(100, func() { Parse("cpu:1..2,load:--,qps:e", &r) }))
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"curTime:1764560000123,load:37.5", "cpu:0.5,inflight:12.5,cap:200,qps:1234.5,eps:0.25,t:1",
		"load:-12.5", "cpu:1e-3", ",,::", "load:1.0E-4",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var r Report
		got := Parse(s, &r)
		if got != r.Has {
			t.Fatalf("Parse(%q) = %v, Has %v", s, got, r.Has)
		}
		for _, v := range []float64{r.JavaLoad, r.CPU, r.Inflight, r.Capacity, r.QPS, r.EPS} {
			if math.IsNaN(v) || v != 0 && v < Resolution || v > MaxValue {
				t.Fatalf("Parse(%q): field out of range: %+v", s, r)
			}
		}
		if r.CPU > MaxCPU || r.TimeMs < 0 || r.Clamped&^r.Has != 0 {
			t.Fatalf("Parse(%q): %+v", s, r)
		}
		// What AppendOwn writes parses back to the same fields.
		var back Report
		if Parse(string(AppendOwn(nil, &r)), &back); back.Has != r.Has&(Own|HasTime) {
			t.Fatalf("round trip of %+v: %+v", r, back)
		}
	})
}
