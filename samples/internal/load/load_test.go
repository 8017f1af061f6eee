package load

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"dubbo.apache.org/dubbo-go/v3/client"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/dubbogo-lb/lb/internal/callstats"
)

// fake answers "even" or "odd" by the parity of the key's number and fails
// key-9.
type fake struct{}

func (fake) Hello(_ context.Context, req *wrapperspb.StringValue, _ ...client.CallOption) (*wrapperspb.StringValue, error) {
	k := req.GetValue()
	switch {
	case k == "key-9":
		return nil, errors.New("boom")
	case strings.HasPrefix(k, "ready-"):
		return wrapperspb.String("even"), nil
	case (k[len(k)-1]-'0')%2 == 0:
		return wrapperspb.String("even"), nil
	default:
		return wrapperspb.String("odd"), nil
	}
}

func TestRunCountsCallsPerProviderAndKey(t *testing.T) {
	total, err := Run(context.Background(), fake{}, Config{Concurrency: 4, Calls: 1000, Keys: 10, TrackKeys: true, Interval: time.Hour}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Keys key-0 … key-9 are sent in turn: 100 calls each.
	if total.Calls != 1000 || total.Errors != 100 {
		t.Fatalf("calls %d errors %d, want 1000 and 100", total.Calls, total.Errors)
	}
	if total.By["even"] != 500 || total.By["odd"] != 400 {
		t.Fatalf("by provider %v, want even 500 odd 400", total.By)
	}
	if s := total.Share["even"]; s < 55.5 || s > 55.6 {
		t.Fatalf("share of even %.2f%%, want 500/900", s)
	}
	if total.LastError != "boom" {
		t.Fatalf("LastError %q, want the fake's error", total.LastError)
	}
	if len(total.Keys) != 9 {
		t.Fatalf("%d keys tracked, want the 9 that succeeded", len(total.Keys))
	}
	for k, by := range total.Keys {
		if len(by) != 1 {
			t.Fatalf("key %s answered by %v, want one provider", k, by)
		}
		for _, n := range by {
			if n != 100 {
				t.Fatalf("key %s: %d calls, want 100", k, n)
			}
		}
	}
	for _, p := range []string{"even", "odd"} {
		if m, ok := total.MeanMs[p]; !ok || m < 0 {
			t.Fatalf("mean latency of %s: %v (%v), want a figure", p, m, ok)
		}
	}
	if total.P50Ms < 0 || total.P99Ms < total.P50Ms {
		t.Fatalf("quantiles p50 %v p99 %v out of order", total.P50Ms, total.P99Ms)
	}
}

// slowOdd answers "even" at once and "odd" after 20 ms.
type slowOdd struct{}

func (slowOdd) Hello(_ context.Context, req *wrapperspb.StringValue, _ ...client.CallOption) (*wrapperspb.StringValue, error) {
	k := req.GetValue()
	if (k[len(k)-1]-'0')%2 == 0 {
		return wrapperspb.String("even"), nil
	}
	time.Sleep(20 * time.Millisecond)
	return wrapperspb.String("odd"), nil
}

// The mean latency per provider is measured per interval and in total. A
// sleep lasts at least its duration, so only lower bounds are asserted:
// a busy machine makes calls slower, never faster.
func TestMeanLatencyPerProvider(t *testing.T) {
	var intervals []callstats.Stats
	before := time.Now()
	total, err := Run(context.Background(), slowOdd{}, Config{Concurrency: 2, Calls: 40, Keys: 10, Interval: 10 * time.Millisecond}, func(s callstats.Stats) {
		intervals = append(intervals, s)
	})
	if err != nil {
		t.Fatal(err)
	}
	if total.By["odd"] != 20 || total.MeanMs["odd"] < 20 {
		t.Fatalf("odd: %d calls, mean %.2f ms; want 20 calls of at least 20 ms", total.By["odd"], total.MeanMs["odd"])
	}
	if total.MeanMs["even"] >= total.MeanMs["odd"] {
		t.Errorf("mean latency of even %.2f ms, not below odd's %.2f ms", total.MeanMs["even"], total.MeanMs["odd"])
	}
	if total.Time.Before(before) || total.Time.After(time.Now()) {
		t.Errorf("total's Time %v outside the run", total.Time)
	}
	var odd int64
	var oddNanos float64
	for _, s := range intervals {
		if s.By["odd"] > 0 {
			odd += s.By["odd"]
			oddNanos += s.MeanMs["odd"] * float64(s.By["odd"])
		}
		if s.Time.Before(before) {
			t.Errorf("interval Time %v before the run", s.Time)
		}
	}
	// Summed over the intervals, the latencies of a provider's calls are
	// all there: a call's latency is counted before the call itself.
	if odd > 0 && oddNanos/float64(odd) < 19.99 {
		t.Errorf("odd's mean over the intervals: %.2f ms, want at least 20", oddNanos/float64(odd))
	}
}

func TestWaitProviders(t *testing.T) {
	names, err := WaitProviders(context.Background(), fake{}, 1, time.Second, time.Second)
	if err != nil || len(names) != 1 || names[0] != "even" {
		t.Fatalf("WaitProviders = %v, %v; want [even]", names, err)
	}
	// Only one provider ever answers the ready calls: asking for two fails
	// at the timeout, with a message that says so.
	if _, err := WaitProviders(context.Background(), fake{}, 2, 50*time.Millisecond, time.Second); err == nil || !strings.Contains(err.Error(), "1 of 2") {
		t.Fatalf("WaitProviders(2) = %v, want an error naming 1 of 2", err)
	}
	if _, err := Run(context.Background(), nil, Config{}, nil); err == nil {
		t.Fatal("Run with a nil greeter did not fail")
	}
}

// With Rate, the workers start at most one call per 1/Rate: 21 instant
// calls at 10 per second take at least 20 gaps of 100 ms (a busy machine
// only makes them take longer); without Rate they take microseconds, and
// fail the check (the control) unless the machine stalls the run for 2 s.
func TestRateSpacesTheCalls(t *testing.T) {
	const calls, rate = 21, 10
	least := time.Duration(calls-1) * time.Second / rate
	for _, c := range []struct {
		name  string
		rate  float64
		paced bool
	}{{"paced", rate, true}, {"negative_control_unpaced", 0, false}} {
		t.Run(c.name, func(t *testing.T) {
			t0 := time.Now()
			total, err := Run(context.Background(), fake{}, Config{Concurrency: 4, Calls: calls, Interval: time.Hour, Rate: c.rate}, nil)
			took := time.Since(t0)
			if err != nil || total.Calls != calls {
				t.Fatalf("calls %d, err %v; want %d calls", total.Calls, err, calls)
			}
			if paced := took >= least; paced != c.paced {
				t.Fatalf("%d calls took %v: paced %v, want %v (at least %v when paced)", calls, took, paced, c.paced, least)
			}
		})
	}
}
