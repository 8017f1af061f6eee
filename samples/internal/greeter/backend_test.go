package greeter

import (
	"context"
	"errors"
	"testing"
	"time"

	"dubbo.apache.org/dubbo-go/v3/client"
	"dubbo.apache.org/dubbo-go/v3/protocol/triple/triple_protocol"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

func TestParseLatency(t *testing.T) {
	good := []struct {
		spec     string
		mean     time.Duration
		min, max time.Duration // bounds of any sample
	}{
		{"", 0, 0, 0},
		{"5ms", 5 * time.Millisecond, 5 * time.Millisecond, 5 * time.Millisecond},
		{" 0s ", 0, 0, 0},
		{"exp:5ms", 5 * time.Millisecond, 0, time.Hour},
		{"uniform:2ms-8ms", 5 * time.Millisecond, 2 * time.Millisecond, 8 * time.Millisecond},
		{"uniform:3ms-3ms", 3 * time.Millisecond, 3 * time.Millisecond, 3 * time.Millisecond},
		{"normal:5ms/1ms", 5 * time.Millisecond, 0, time.Hour},
	}
	for _, c := range good {
		l, err := ParseLatency(c.spec)
		if err != nil {
			t.Fatalf("ParseLatency(%q): %v", c.spec, err)
		}
		if l.Mean() != c.mean {
			t.Errorf("ParseLatency(%q).Mean() = %v, want %v", c.spec, l.Mean(), c.mean)
		}
		for range 1000 {
			if d := l.Sample(); d < c.min || d > c.max {
				t.Fatalf("ParseLatency(%q).Sample() = %v, outside [%v, %v]", c.spec, d, c.min, c.max)
			}
		}
	}
	for _, spec := range []string{"5", "-1ms", "exp:", "exp:-2ms", "uniform:8ms-2ms", "uniform:2ms", "normal:5ms", "gauss:1ms/1ms", "abc"} {
		if _, err := ParseLatency(spec); err == nil {
			t.Errorf("ParseLatency(%q) accepted a bad spec", spec)
		}
	}
}

func TestBackend(t *testing.T) {
	for _, rate := range []float64{-0.1, 1.5} {
		if _, err := NewBackend("b", Latency{}, rate); err == nil {
			t.Errorf("NewBackend accepted error rate %v", rate)
		}
	}
	if _, err := NewBackend("", Latency{}, 0); err == nil {
		t.Error("NewBackend accepted an empty name")
	}

	ok, err := NewBackend("ok", Latency{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := ok.Hello(context.Background(), wrapperspb.String("k"))
	if err != nil || resp.GetValue() != "ok" {
		t.Fatalf("Hello = %v, %v; want the backend's name", resp, err)
	}
	bad, err := NewBackend("bad", Latency{}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bad.Hello(context.Background(), wrapperspb.String("k")); !errors.Is(err, ErrSimulated) {
		t.Fatalf("Hello with error rate 1 = %v, want ErrSimulated", err)
	}
	if ok.Served() != 1 || bad.Failed() != 1 {
		t.Errorf("counters: served %d failed %d, want 1 and 1", ok.Served(), bad.Failed())
	}

	// A cancelled call returns at once instead of sleeping its latency.
	slow, err := NewBackend("slow", Fixed(time.Hour), 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := slow.Hello(ctx, wrapperspb.String("k")); !errors.Is(err, context.Canceled) {
		t.Fatalf("Hello on a cancelled context = %v, want context.Canceled", err)
	}
}

func TestRequestStringIsTheKey(t *testing.T) {
	// Consistent hashing hashes the argument's string form: it must be the
	// key itself, not protobuf's text format.
	r := Request{wrapperspb.String("user-42")}
	if got := r.String(); got != "user-42" {
		t.Fatalf("Request.String() = %q, want the key", got)
	}
}

func TestHasInvoker(t *testing.T) {
	// A connection dubbo-go failed to build (nil invoker) is refused
	// instead of panicking on its first call.
	if hasInvoker(nil) || hasInvoker(&client.Connection{}) {
		t.Fatal("hasInvoker accepted a connection without an invoker")
	}
}

// During its Failure a backend fails every call at once with the status
// asked for, and serves again after.
func TestBackendFailure(t *testing.T) {
	b, err := NewBackend("p", Fixed(time.Hour), 0) // a call that waited would time out the test
	require.NoError(t, err)
	start := time.Unix(1_700_000_000, 0)
	from, err := ParseWhen("10s", start)
	require.NoError(t, err)
	until, err := ParseWhen(start.Add(20*time.Second).Format(time.RFC3339), start)
	require.NoError(t, err)
	code, err := ParseCode("unavailable")
	require.NoError(t, err)
	b.FailDuring(Failure{From: from, Until: until, Code: code})
	now := start.Add(15 * time.Second)
	b.now = func() time.Time { return now }
	_, err = b.Hello(context.Background(), nil)
	require.ErrorIs(t, err, ErrFailing)
	assert.Equal(t, triple_protocol.CodeUnavailable, triple_protocol.CodeOf(err))
	assert.EqualValues(t, 1, b.Failed())

	b.latency = Fixed(0)
	now = start.Add(20 * time.Second)
	_, err = b.Hello(context.Background(), nil)
	require.NoError(t, err, "recovered")
	now = start.Add(9 * time.Second)
	_, err = b.Hello(context.Background(), nil)
	require.NoError(t, err, "not yet failing")

	for _, bad := range []string{"-1s", "tomorrow"} {
		_, err := ParseWhen(bad, start)
		assert.Error(t, err, bad)
	}
	zero, err := ParseWhen("", start)
	assert.NoError(t, err)
	assert.True(t, zero.IsZero())
	for s, want := range map[string]triple_protocol.Code{"internal": 13, "biz_error": 17, "2": 2} {
		c, err := ParseCode(s)
		assert.NoError(t, err)
		assert.Equal(t, want, c)
	}
	for _, bad := range []string{"", "oops", "0", "99"} {
		_, err := ParseCode(bad)
		assert.Error(t, err, bad)
	}
}
