// Package loadreport is the wire format of the load a provider reports on
// each answer, and nothing else: it knows nothing of dubbo-go.
//
// A consumer asks for a report by sending the request attachment AskKey
// ("lb_adaptive"), as Dubbo Java's adaptive balancer does (its value,
// "mem,load" from Java, is not read). A provider that reports answers with
// up to two result attachments:
//
//   - JavaKey ("lb_adaptive"): Dubbo Java's ProfilerServerFilter format,
//     "curTime:<provider wall clock, ms>,load:<load average × 100 / CPUs>",
//     which Dubbo Java's adaptive consumers read and every Java provider
//     sends;
//   - OwnKey ("lb-load"): this module's richer fields, in the same
//     "name:value" comma-separated form (see Report).
//
// Over triple both travel as response trailers (lower-case names on the
// wire; Go's HTTP client canonicalizes them to TrailerJava and TrailerOwn).
// Parse reads either value without allocating; unknown names are skipped,
// malformed or negative numbers are dropped (the field reads as absent),
// and numbers outside a field's range are clamped into it (see MaxValue,
// Resolution), never a panic: every field of a parsed Report is finite, so
// no cost, weight or share computed from it is NaN or infinite.
package loadreport

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// Attachment names.
const (
	// AskKey is the request attachment that asks for a report (Dubbo
	// Java's Constants.ADAPTIVE_LOADBALANCE_ATTACHMENT_KEY).
	AskKey = "lb_adaptive"
	// AskValue is what Dubbo Java's adaptive balancer sends under AskKey.
	AskValue = "mem,load"
	// JavaKey is the result attachment of Dubbo Java's format.
	JavaKey = "lb_adaptive"
	// OwnKey is the result attachment of this module's fields.
	OwnKey = "lb-load"
	// TrailerJava and TrailerOwn are JavaKey and OwnKey as Go's HTTP
	// client keys a triple response's trailers (http.CanonicalHeaderKey).
	TrailerJava = "Lb_adaptive"
	TrailerOwn  = "Lb-Load"
)

// Report is what a provider says of its load. A field that a report did
// not carry (or carried malformed) is left at its zero value and its bit
// in Has is clear.
type Report struct {
	// TimeMs is the provider's wall clock when it answered, Unix ms
	// (Java's curTime; ours is "t").
	TimeMs int64
	// JavaLoad is Dubbo Java's load: the 1-minute load average × 100 /
	// available processors, in percent of the machine ("load").
	JavaLoad float64
	// CPU is the provider process's CPU utilization, smoothed, as a
	// fraction of the CPUs it may use (GOMAXPROCS), in [0, 1] ("cpu").
	CPU float64
	// Inflight is the provider's calls in flight, smoothed over time
	// ("inflight").
	Inflight float64
	// Capacity is the calls in flight the provider is configured to take
	// at most; 0: not configured ("cap").
	Capacity float64
	// QPS and EPS are the calls and the failed calls per second it served,
	// smoothed, for every consumer together ("qps", "eps").
	QPS, EPS float64
	// Has says which fields the report carried (HasTime, HasJavaLoad…).
	Has Field
	// Clamped says which fields carried a value outside their range and
	// were clamped into it (by Parse, or HasTime by NotAfter); a subset of
	// Has.
	Clamped Field
}

// Field is a set of fields of a Report.
type Field uint8

// The fields of a Report.
const (
	HasTime Field = 1 << iota
	HasJavaLoad
	HasCPU
	HasInflight
	HasCapacity
	HasQPS
	HasEPS
)

// Own is the set of fields of this module's format: a report with any of
// them came from a provider with our filter.
const Own = HasCPU | HasInflight | HasCapacity | HasQPS | HasEPS

// The ranges of the fields. A value above a field's maximum reads as the
// maximum, a positive value below Resolution as 0; either sets the field's
// bit in Report.Clamped. With every field in [Resolution, MaxValue] or 0,
// the ratios the balancers take (eps / qps, inflight / cap, qps / cpu) stay
// within 1e13 and their costs finite (DESIGN.md of package loadaware).
const (
	// MaxValue bounds JavaLoad (percent), Inflight, Capacity, QPS and EPS.
	// Rates and counts of a real provider stay far below it.
	MaxValue = 1e9
	// MaxCPU bounds CPU, a fraction of the CPUs the provider may use.
	MaxCPU = 1
	// Resolution is the least positive value a field holds: the format's
	// 4 decimals (AppendOwn).
	Resolution = 1e-4
	// MaxSkew is how far ahead of the consumer's clock a report's time
	// may be before NotAfter counts it as clamped; any time ahead is
	// treated as now.
	MaxSkew = time.Minute
)

// AppendJava appends Dubbo Java's format of r (curTime and load) to b.
func AppendJava(b []byte, r *Report) []byte {
	b = append(b, "curTime:"...)
	b = strconv.AppendInt(b, r.TimeMs, 10)
	b = append(b, ",load:"...)
	return appendFloat(b, r.JavaLoad)
}

// AppendOwn appends this module's format of r to b: every field that r
// Has, in a fixed order.
func AppendOwn(b []byte, r *Report) []byte {
	start := len(b)
	sep := func() {
		if len(b) > start {
			b = append(b, ',')
		}
	}
	for _, f := range ownFields {
		if r.Has&f.has != 0 {
			sep()
			b = appendFloat(append(append(b, f.name...), ':'), *r.float(f.has))
		}
	}
	if r.Has&HasTime != 0 {
		sep()
		b = strconv.AppendInt(append(b, "t:"...), r.TimeMs, 10)
	}
	return b
}

// ownFields are the fields of this module's format with their names, in
// the order AppendOwn writes them (before "t").
var ownFields = [...]struct {
	has  Field
	name string
}{{HasCPU, "cpu"}, {HasInflight, "inflight"}, {HasCapacity, "cap"}, {HasQPS, "qps"}, {HasEPS, "eps"}}

// float returns the address of the field f of r, one of its float fields
// (any Field but HasTime; nil for any other value).
func (r *Report) float(f Field) *float64 {
	switch f {
	case HasJavaLoad:
		return &r.JavaLoad
	case HasCPU:
		return &r.CPU
	case HasInflight:
		return &r.Inflight
	case HasCapacity:
		return &r.Capacity
	case HasQPS:
		return &r.QPS
	case HasEPS:
		return &r.EPS
	}
	return nil
}

// appendFloat appends f with at most 4 decimals, as short as possible.
func appendFloat(b []byte, f float64) []byte {
	return strconv.AppendFloat(b, math.Round(f*1e4)/1e4, 'f', -1, 64)
}

// Parse reads the fields of s, a value of JavaKey or OwnKey, into r,
// overwriting the fields it finds (so a Java value and an own value can be
// read into one Report). It returns the fields it read; those it clamped
// are added to r.Clamped. It allocates nothing for well-formed input.
func Parse(s string, r *Report) Field {
	var got, clamped Field
	for len(s) > 0 {
		var item string
		item, s = cut(s, ',')
		name, value := cut(item, ':')
		f, v, ok := field(trim(name), trim(value))
		if !ok {
			continue
		}
		if f == HasTime {
			r.TimeMs = int64(v)
		} else {
			c := clamp(f, v)
			if c != v {
				clamped |= f
			} else {
				clamped &^= f // a later value of the field replaces it
			}
			*r.float(f) = c
		}
		got |= f
	}
	r.Has |= got
	r.Clamped = r.Clamped&^got | clamped
	return got
}

// clamp returns v, a finite value of the float field f, clamped into its
// range: at most MaxCPU or MaxValue, 0 below Resolution.
func clamp(f Field, v float64) float64 {
	hi := float64(MaxValue)
	if f == HasCPU {
		hi = MaxCPU
	}
	switch {
	case !(v >= Resolution): // NaN included, which field never returns
		return 0
	case v > hi:
		return hi
	}
	return v
}

// NotAfter treats a report time ahead of nowMs, the consumer's wall clock
// (Unix ms), as nowMs: a provider's clock that runs ahead, or a forged
// time, must not make its later reports look older than this one. A time
// more than MaxSkew ahead sets HasTime in Clamped.
func (r *Report) NotAfter(nowMs int64) {
	if r.Has&HasTime == 0 || r.TimeMs <= nowMs {
		return
	}
	if r.TimeMs-nowMs > MaxSkew.Milliseconds() {
		r.Clamped |= HasTime
	}
	r.TimeMs = nowMs
}

// String returns the names of the fields of f, comma-separated, in the
// format's spelling ("cpu,qps,t"); "load" for JavaLoad.
func (f Field) String() string {
	var b strings.Builder
	for _, x := range [...]struct {
		has  Field
		name string
	}{{HasTime, "t"}, {HasJavaLoad, "load"}, {HasCPU, "cpu"}, {HasInflight, "inflight"}, {HasCapacity, "cap"}, {HasQPS, "qps"}, {HasEPS, "eps"}} {
		if f&x.has != 0 {
			if b.Len() > 0 {
				b.WriteByte(',')
			}
			b.WriteString(x.name)
		}
	}
	return b.String()
}

// field maps a name and its value to a Field; the value is finite and not
// negative (a float field's is clamped by Parse).
func field(name, value string) (Field, float64, bool) {
	var f Field
	switch name {
	case "curTime", "t":
		// Whole milliseconds; Java writes a long.
		n, ok := parseInt(value)
		return HasTime, float64(n), ok && n > 0
	case "load":
		// Java's load average is -1 where the platform has none: -100/CPUs.
		f = HasJavaLoad
	case "cpu":
		f = HasCPU
	case "inflight":
		f = HasInflight
	case "cap":
		f = HasCapacity
	case "qps":
		f = HasQPS
	case "eps":
		f = HasEPS
	default:
		return 0, 0, false
	}
	v, ok := parseFloat(value)
	if !ok || v < 0 {
		return 0, 0, false
	}
	return f, v, true
}

// parseFloat parses a decimal number (Java's Double.toString forms
// included: 12.5, 1.0E-4) without allocating for valid input.
func parseFloat(s string) (float64, bool) {
	if s == "" || len(s) > 32 || !numeric(s) {
		return 0, false
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, false
	}
	return v, true
}

// parseInt parses a non-negative decimal integer of at most 18 digits.
func parseInt(s string) (int64, bool) {
	if s == "" || len(s) > 18 {
		return 0, false
	}
	var n int64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// numeric reports whether s is a decimal float, [+-]d[.d][(e|E)[+-]d]
// with at least one digit before the exponent and at most two in it, so
// that strconv never builds an error (which allocates) for it.
func numeric(s string) bool {
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	d := 0
	for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
		d++
	}
	if i < len(s) && s[i] == '.' {
		for i++; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
			d++
		}
	}
	if d == 0 {
		return false
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		e := 0
		for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
			e++
		}
		if e == 0 || e > 2 {
			return false
		}
	}
	return i == len(s)
}

func cut(s string, sep byte) (before, after string) {
	for i := 0; i < len(s); i++ {
		if s[i] == sep {
			return s[:i], s[i+1:]
		}
	}
	return s, ""
}

func trim(s string) string {
	for len(s) > 0 && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for len(s) > 0 && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}
