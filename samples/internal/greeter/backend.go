package greeter

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"dubbo.apache.org/dubbo-go/v3/protocol/triple/triple_protocol"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// ErrSimulated is the error a Backend returns for the share of calls its
// ErrorRate asks to fail.
var ErrSimulated = fmt.Errorf("greeter: simulated error")

// ErrFailing is the error of every call during a Backend's Failure.
var ErrFailing = fmt.Errorf("greeter: failing on purpose")

// Failure is a spell during which a Backend answers every call at once
// with an error of status Code (a triple status, which dubbo-go carries to
// the consumer; a plain error would reach it as biz_error).
type Failure struct {
	// From and Until bound the spell; a zero Until never ends it.
	From, Until time.Time
	// Code is the status of the errors.
	Code triple_protocol.Code
}

// at reports whether the spell covers t.
func (f *Failure) at(t time.Time) bool {
	return !f.From.IsZero() && !t.Before(f.From) && (f.Until.IsZero() || t.Before(f.Until))
}

// Backend is a Handler that answers with its name after a simulated
// latency and fails a given share of calls. It is safe for concurrent use.
type Backend struct {
	name    string
	latency Latency
	errRate float64
	failure atomic.Pointer[Failure]
	now     func() time.Time
	served  atomic.Int64
	failed  atomic.Int64
}

// NewBackend returns a Backend named name (the reply of every call) that
// takes latency per call and fails the share errRate of calls, in [0, 1].
func NewBackend(name string, latency Latency, errRate float64) (*Backend, error) {
	if name == "" {
		return nil, fmt.Errorf("greeter: empty backend name")
	}
	if !(errRate >= 0 && errRate <= 1) { // also rejects NaN
		return nil, fmt.Errorf("greeter: error rate %v is not in [0, 1]", errRate)
	}
	return &Backend{name: name, latency: latency, errRate: errRate, now: time.Now}, nil
}

// FailDuring makes the backend fail every call during f, in place of the
// spell set before; it may be called while the backend serves.
func (b *Backend) FailDuring(f Failure) { b.failure.Store(&f) }

// Hello implements Handler.
func (b *Backend) Hello(ctx context.Context, _ *wrapperspb.StringValue) (*wrapperspb.StringValue, error) {
	if f := b.failure.Load(); f != nil && f.at(b.now()) {
		b.failed.Add(1)
		return nil, triple_protocol.NewError(f.Code, fmt.Errorf("%w on %s", ErrFailing, b.name))
	}
	if d := b.latency.Sample(); d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			b.failed.Add(1)
			return nil, ctx.Err()
		}
	}
	if b.errRate > 0 && rand.Float64() < b.errRate {
		b.failed.Add(1)
		return nil, fmt.Errorf("%w on %s", ErrSimulated, b.name)
	}
	b.served.Add(1)
	return wrapperspb.String(b.name), nil
}

// Name returns the backend's name.
func (b *Backend) Name() string { return b.name }

// Served returns how many calls the backend answered successfully.
func (b *Backend) Served() int64 { return b.served.Load() }

// Failed returns how many calls the backend failed on purpose or by
// cancellation.
func (b *Backend) Failed() int64 { return b.failed.Load() }

// ParseWhen reads a time of the sample provider's flags: a duration after
// start ("30s") or a wall-clock time in RFC 3339 ("2026-12-01T10:00:00Z");
// "" is the zero time (never).
func ParseWhen(s string, start time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return time.Time{}, fmt.Errorf("time %q: negative duration", s)
		}
		return start.Add(d), nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("time %q: neither a duration after start (30s) nor an RFC 3339 time", s)
	}
	return t, nil
}

// ParseCode reads a triple status code by name (unavailable, internal,
// unknown…, biz_error) or number.
func ParseCode(s string) (triple_protocol.Code, error) {
	s = strings.TrimSpace(s)
	if s == "biz_error" {
		return triple_protocol.CodeBizError, nil
	}
	var c triple_protocol.Code
	if n, err := strconv.Atoi(s); err == nil && n > 0 && n < 32 {
		return triple_protocol.Code(n), nil
	}
	if err := c.UnmarshalText([]byte(s)); err != nil || c < 1 || c > 31 { // code_99 parses
		return 0, fmt.Errorf("status code %q: not a triple status name (unavailable, internal, unknown, biz_error…) nor a number from 1 to 31", s)
	}
	return c, nil
}

// Latency is a distribution of simulated service times. The zero value is
// no delay.
type Latency struct {
	kind      byte // 0 fixed, 'e' exponential, 'u' uniform, 'n' normal
	a, b      time.Duration
	canonical string
}

// ParseLatency reads a latency spec:
//
//	5ms                fixed
//	exp:5ms            exponential with mean 5ms
//	uniform:2ms-8ms    uniform between 2ms and 8ms
//	normal:5ms/1ms     normal with mean 5ms and standard deviation 1ms,
//	                   cut at 0
//
// An empty spec is no delay.
func ParseLatency(spec string) (Latency, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return Latency{}, nil
	}
	bad := func(err error) (Latency, error) {
		return Latency{}, fmt.Errorf("latency %q: %w (want 5ms, exp:5ms, uniform:2ms-8ms or normal:5ms/1ms)", spec, err)
	}
	kind, rest, hasKind := strings.Cut(spec, ":")
	if !hasKind {
		d, err := parseNonNegative(spec)
		if err != nil {
			return bad(err)
		}
		return Latency{a: d, canonical: d.String()}, nil
	}
	l := Latency{canonical: spec}
	var err error
	switch kind {
	case "exp":
		l.kind = 'e'
		l.a, err = parseNonNegative(rest)
	case "uniform", "normal":
		sep := "-"
		if kind == "normal" {
			sep = "/"
		}
		lo, hi, ok := strings.Cut(rest, sep)
		if !ok {
			return bad(fmt.Errorf("missing %q", sep))
		}
		if l.a, err = parseNonNegative(lo); err == nil {
			l.b, err = parseNonNegative(hi)
		}
		l.kind = kind[0]
		if err == nil && kind == "uniform" && l.b < l.a {
			err = fmt.Errorf("upper bound below lower bound")
		}
	default:
		err = fmt.Errorf("unknown distribution %q", kind)
	}
	if err != nil {
		return bad(err)
	}
	return l, nil
}

func parseNonNegative(s string) (time.Duration, error) {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return 0, err
	}
	if d < 0 {
		return 0, fmt.Errorf("negative duration %v", d)
	}
	return d, nil
}

// Fixed returns a Latency of exactly d.
func Fixed(d time.Duration) Latency { return Latency{a: max(d, 0), canonical: max(d, 0).String()} }

// Mean returns the mean of the distribution (of the uncut normal).
func (l Latency) Mean() time.Duration {
	if l.kind == 'u' {
		return (l.a + l.b) / 2
	}
	return l.a
}

// String returns the spec the Latency was parsed from.
func (l Latency) String() string {
	if l.canonical == "" {
		return "0s"
	}
	return l.canonical
}

// Sample draws one service time.
func (l Latency) Sample() time.Duration {
	switch l.kind {
	case 'e':
		return time.Duration(rand.ExpFloat64() * float64(l.a))
	case 'u':
		return l.a + time.Duration(rand.Int64N(int64(l.b-l.a)+1))
	case 'n':
		return time.Duration(math.Max(0, float64(l.a)+rand.NormFloat64()*float64(l.b)))
	}
	return l.a
}
