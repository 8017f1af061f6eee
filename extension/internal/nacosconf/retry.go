package nacosconf

import (
	"fmt"
	"strconv"
	"time"

	"dubbo.apache.org/dubbo-go/v3/common"
)

// Dubbo Java's Nacos registry parameters for a registration that Nacos
// fails (refused, or not answered within nacos.timeout), read from the
// registry URL.
const (
	// RetryKey is how many more times a failed registration is tried
	// (default 10, at most 100; 0: none).
	RetryKey = "nacos.retry"
	// RetryWaitKey is the wait before the first retry, in
	// milliseconds (default 10, at most 60 000); see Retry.Before.
	RetryWaitKey = "nacos.retry-wait"
)

// Retry says how a registration that Nacos failed is tried again.
type Retry struct {
	Tries int           // more tries after the first
	Wait  time.Duration // before the first retry
}

// maxBackoff caps the growth of Retry.Before.
const maxBackoff = 30 * time.Second

// Before returns the wait before retry number try (1 for the first):
// Wait, three times as long for each retry after the first, up to 30 s (or
// Wait, if longer). Dubbo Java waits Wait every time, but it creates its
// Nacos client only once the client is connected; dubbo-go registers
// through a client that may still be connecting, which fails each try at
// once ("client not connected"): ten tries 10 ms apart were over within
// 4 s of a Nacos started on a busy machine, and doubling waits (10 s for
// the ten) within 20 s of a Nacos at a load average of 65. With the
// defaults the ten retries now wait about 93 s in all, beside the time the
// tries themselves take: a provider outlasts a registry silent for a
// minute and a half, and still fails its start within a few minutes when
// none is there.
func (r Retry) Before(try int) time.Duration {
	limit := max(r.Wait, maxBackoff)
	d := r.Wait
	for i := 1; i < try && d < limit; i++ {
		d *= 3
	}
	return min(d, limit)
}

// Do calls f until it returns nil, at most Tries more times than once;
// before retry k it calls retrying with the error and k, then sleeps
// Before(k). It returns f's last error.
func (r Retry) Do(sleep func(time.Duration), retrying func(err error, try int), f func() error) error {
	err := f()
	for try := 1; err != nil && try <= r.Tries; try++ {
		retrying(err, try)
		sleep(r.Before(try))
		err = f()
	}
	return err
}

// Defaults and bounds of Retry, Dubbo Java's.
const (
	defaultRetries   = 10
	defaultRetryWait = 10 * time.Millisecond
	maxRetries       = 100
	maxRetryWait     = time.Minute
)

// ReadRetry reads RetryKey and RetryWaitKey from the
// registry URL u (nil: the defaults). A value that is not a whole number
// in range is dropped (its default applies) and problems says so, one
// entry per value.
func ReadRetry(u *common.URL) (Retry, []string) {
	return ParseRetry(func(key string) string {
		if u == nil {
			return ""
		}
		return u.GetParam(key, "")
	})
}

// ParseRetry is ReadRetry over param, which returns a key's raw
// value ("" when unset). It never panics.
func ParseRetry(param func(key string) string) (r Retry, problems []string) {
	r = Retry{Tries: defaultRetries, Wait: defaultRetryWait}
	if v := param(RetryKey); v != "" {
		if n, err := strconv.Atoi(v); err != nil || n < 0 || n > maxRetries {
			problems = append(problems, fmt.Sprintf("%s=%q is not a whole number from 0 to %d; using %d",
				RetryKey, v, maxRetries, defaultRetries))
		} else {
			r.Tries = n
		}
	}
	if v := param(RetryWaitKey); v != "" {
		maxMs := int(maxRetryWait / time.Millisecond)
		if ms, err := strconv.Atoi(v); err != nil || ms < 0 || ms > maxMs {
			problems = append(problems, fmt.Sprintf("%s=%q is not a number of milliseconds from 0 to %d; using %v",
				RetryWaitKey, v, maxMs, defaultRetryWait))
		} else {
			r.Wait = time.Duration(ms) * time.Millisecond
		}
	}
	return r, problems
}
