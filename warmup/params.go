package warmup

import (
	"strconv"
	"strings"
	"time"

	"dubbo.apache.org/dubbo-go/v3/common"
	"dubbo.apache.org/dubbo-go/v3/common/constant"
)

// DefaultTimeout is dubbo-go's request timeout, for providers whose URL
// states none.
const DefaultTimeout = 3 * time.Second

// MethodParam returns the value of key for method on the provider URL u:
// methods.<method>.<key> first, then key, else "". It builds strings: call
// it when a snapshot is built, never per call.
func MethodParam(u *common.URL, method, key string) string {
	if method != "" {
		if v := u.GetParam("methods."+method+"."+key, ""); v != "" {
			return v
		}
	}
	return u.GetParam(key, "")
}

// MethodTimeout returns the call timeout of method that the provider URL u
// states (methods.<method>.timeout first, then timeout), and whether it
// states a valid one; DefaultTimeout when it does not. Both dubbo-go's
// duration strings ("3s", "500ms") and Dubbo Java's plain milliseconds
// ("3000") are understood. Like MethodParam, it is for snapshot builds.
func MethodTimeout(u *common.URL, method string) (time.Duration, bool) {
	if method != "" {
		if d, ok := parseTimeout(u.GetParam("methods."+method+"."+constant.TimeoutKey, "")); ok {
			return d, true
		}
	}
	if d, ok := parseTimeout(u.GetParam(constant.TimeoutKey, "")); ok {
		return d, true
	}
	return DefaultTimeout, false
}

// maxTimeout caps a method timeout: a longer one is taken as a mistake.
const maxTimeout = 365 * 24 * time.Hour

func parseTimeout(v string) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if d, err := time.ParseDuration(v); err == nil && d > 0 && d <= maxTimeout {
		return d, true
	}
	if ms, err := strconv.ParseInt(v, 10, 64); err == nil && ms > 0 && ms <= int64(maxTimeout/time.Millisecond) {
		return time.Duration(ms) * time.Millisecond, true
	}
	return 0, false
}
