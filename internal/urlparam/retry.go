package urlparam

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
	// NacosRetryKey is how many more times a failed registration is tried
	// (default 10, at most 100; 0: none).
	NacosRetryKey = "nacos.retry"
	// NacosRetryWaitKey is the wait between two tries, in milliseconds
	// (default 10, at most 60 000).
	NacosRetryWaitKey = "nacos.retry-wait"
)

// NacosRetry says how a registration that Nacos failed is tried again.
type NacosRetry struct {
	Tries int           // more tries after the first
	Wait  time.Duration // between two tries
}

// Defaults and bounds of NacosRetry, Dubbo Java's.
const (
	defaultNacosRetries   = 10
	defaultNacosRetryWait = 10 * time.Millisecond
	maxNacosRetries       = 100
	maxNacosRetryWait     = time.Minute
)

// ReadNacosRetry reads NacosRetryKey and NacosRetryWaitKey from the
// registry URL u. A value that is not a whole number in range is dropped
// (its default applies) and problems says so, one entry per value.
func ReadNacosRetry(u *common.URL) (NacosRetry, []string) {
	return ParseNacosRetry(func(key string) string { return u.GetParam(key, "") })
}

// ParseNacosRetry is ReadNacosRetry over param, which returns a key's raw
// value ("" when unset). It never panics.
func ParseNacosRetry(param func(key string) string) (r NacosRetry, problems []string) {
	r = NacosRetry{Tries: defaultNacosRetries, Wait: defaultNacosRetryWait}
	if v := param(NacosRetryKey); v != "" {
		if n, err := strconv.Atoi(v); err != nil || n < 0 || n > maxNacosRetries {
			problems = append(problems, fmt.Sprintf("%s=%q is not a whole number from 0 to %d; using %d",
				NacosRetryKey, v, maxNacosRetries, defaultNacosRetries))
		} else {
			r.Tries = n
		}
	}
	if v := param(NacosRetryWaitKey); v != "" {
		maxMs := int(maxNacosRetryWait / time.Millisecond)
		if ms, err := strconv.Atoi(v); err != nil || ms < 0 || ms > maxMs {
			problems = append(problems, fmt.Sprintf("%s=%q is not a number of milliseconds from 0 to %d; using %v",
				NacosRetryWaitKey, v, maxMs, defaultNacosRetryWait))
		} else {
			r.Wait = time.Duration(ms) * time.Millisecond
		}
	}
	return r, problems
}
