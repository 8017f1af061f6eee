package nacosconf

import (
	"strconv"
	"testing"
	"time"
)

// The wait before each retry of a registration triples from nacos.retry-wait
// up to 30 s, or stays at a longer nacos.retry-wait.
func TestRetryBackoff(t *testing.T) {
	ms := time.Millisecond
	for _, c := range []struct {
		wait time.Duration
		want []time.Duration // before retries 1, 2, ...
	}{
		{10 * ms, []time.Duration{10 * ms, 30 * ms, 90 * ms, 270 * ms, 810 * ms, 2430 * ms, 7290 * ms, 21870 * ms, 30000 * ms, 30000 * ms, 30000 * ms}},
		{1500 * ms, []time.Duration{1500 * ms, 4500 * ms, 13500 * ms, 30000 * ms, 30000 * ms}},
		{45 * time.Second, []time.Duration{45 * time.Second, 45 * time.Second}},
		{0, []time.Duration{0, 0, 0}},
	} {
		r := Retry{Tries: len(c.want), Wait: c.wait}
		for i, want := range c.want {
			if got := r.Before(i + 1); got != want {
				t.Errorf("wait %v: %v before retry %d; want %v", c.wait, got, i+1, want)
			}
		}
	}
	if got := (Retry{Wait: time.Minute}).Before(100); got != time.Minute {
		t.Errorf("the longest wait before the 100th retry: %v; want 1m0s", got)
	}
}

// A report or registry without a URL gets the default retries.
func TestReadRetryWithoutURL(t *testing.T) {
	if r, problems := ReadRetry(nil); r != (Retry{Tries: defaultRetries, Wait: defaultRetryWait}) || len(problems) != 0 {
		t.Errorf("ReadRetry(nil) = %+v, %q; want the defaults", r, problems)
	}
}

// FuzzParseRetry checks nacos.retry and nacos.retry-wait: whatever the
// values, the tries and the wait stay in range, a value that is not used
// as given is reported, and nothing panics.
func FuzzParseRetry(f *testing.F) {
	for _, s := range [][2]string{{"", ""}, {"3", "1500"}, {"-1", "soon"}, {"1000000", "60001"}, {" 2", "9e9"}, {"0", "0"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, retry, wait string) {
		r, problems := ParseRetry(func(key string) string {
			return map[string]string{RetryKey: retry, RetryWaitKey: wait}[key]
		})
		if r.Tries < 0 || r.Tries > maxRetries || r.Wait < 0 || r.Wait > maxRetryWait {
			t.Fatalf("ParseRetry(%q, %q) = %+v: out of range", retry, wait, r)
		}
		n, err := strconv.Atoi(retry)
		asGiven := retry == "" || err == nil && n == r.Tries
		ms, err := strconv.Atoi(wait)
		asGiven = asGiven && (wait == "" || err == nil && ms >= 0 && ms <= 60_000 && time.Duration(ms)*time.Millisecond == r.Wait)
		if asGiven != (len(problems) == 0) {
			t.Fatalf("ParseRetry(%q, %q) = %+v with problems %q", retry, wait, r, problems)
		}
	})
}
