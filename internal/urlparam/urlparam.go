// Package urlparam reads the parameters of a provider URL that the module
// uses, in one place and under two rules: each key from its owner (Whose:
// the consumer's own reference URL, which every provider URL carries, for
// the consumer's policy; the consumer's value before the provider's for a
// key Dubbo lets a provider set; the provider's for its own facts), and a
// method-level value (methods.<m>.<key>, dubbo-go's spelling, then
// <m>.<key>, Dubbo Java's) before the service-level one (MethodParam); ServiceParam for those read at
// service level only (timestamp, warmup, release). Typed readers check the
// values and fall back to defaults: MethodTimeout (the method's timeout) and
// Actives (the filter's limit of calls in flight). The weight policy and the
// warmup curve stay in package warmup; hash.nodes and hash.arguments are
// parsed by the ringhash balancer (loadbalance/ringhash) from MethodParam.
//
// The method-level readers build strings: call them when a snapshot or a
// limit is built, never per call.
package urlparam

import (
	"strconv"
	"strings"
	"time"

	"dubbo.apache.org/dubbo-go/v3/common"
	"dubbo.apache.org/dubbo-go/v3/common/constant"
)

// WeightFactorKey is the provider URL parameter that carries the factor
// by which the Nacos discovery of package extension scales the provider's
// own weight (instance weight edited in the Nacos console, drain: see
// extension/internal/nacosweight). Read at service level only, with
// ServiceParam; absent on URLs from anywhere else (factor 1).
const WeightFactorKey = "lb.weight.factor"

// ZoneKey is the provider URL parameter that names the provider's zone,
// for zone-aware routing: set by a provider itself (any Dubbo provider can
// add the parameter), else by the Nacos discovery of package extension
// from the instance's cluster name. Read at service level only.
const ZoneKey = "lb.zone"

// LocalZoneKey is the consumer's own zone (consumer-only: Whose), and
// LocalZoneEnv the environment variable that gives it when the reference
// does not: zone-aware routing reads them (package loadbalance/internal/zone,
// whose LocalKey and Env they equal) and so does subsetting, which draws a
// zoned consumer's subset within zones.
const (
	LocalZoneKey = "lb.zone.local"
	LocalZoneEnv = "DUBBOGO_LB_ZONE"
)

// DefaultTimeout is dubbo-go's request timeout, for providers whose URL
// states none.
const DefaultTimeout = 3 * time.Second

// MethodParam returns the value of key for method on the provider URL u,
// the first non-empty of
//
//  1. methods.<method>.<key>, dubbo-go's spelling of a method-level
//     parameter (what dubbo-go's own URL.GetMethodParam reads);
//  2. <method>.<key>, Dubbo Java's spelling (sayHello.weight,
//     sayHello.hash.nodes: what a Java provider registers for a
//     <dubbo:method> setting), read as Java reads it: only when u has no
//     "methods" parameter or lists method in it;
//  3. key, the service-level value;
//
// else "". An empty value counts as absent at every level, as in both Dubbo
// Java and dubbo-go.
//
// When both method-level spellings are present, dubbo-go's wins. A Java
// provider never writes it, so next to a Java provider's <method>.<key> it
// comes from dubbo-go, in practice from the consumer: URL.MergeURL copies
// the consumer's own methods.<method>.timeout (and loadbalance, cluster,
// retries) over the provider URL, and a consumer's setting overrides the
// provider's in Dubbo Java too. Its "methods." prefix is also unambiguous,
// while <method>.<key> is an ordinary dotted key. It builds strings: call it when a snapshot is built, never per
// call.
//
// Each key is read from its owner (Whose): a consumer-only key from the
// consumer's own reference URL that u carries (Consumer), never from the
// provider's; a shared key in Dubbo Java's precedence, each level on the
// consumer's URL before the provider's; a provider-only key from u.
func MethodParam(u *common.URL, method, key string) string { return KeysOf(method, key).Param(u) }

// MethodKeys are the keys of one parameter for one method, built once (two
// strings) to read many provider URLs without allocating.
type MethodKeys struct{ key, method, dubboGo, java string }

// KeysOf returns the keys of key for method ("": the service level only).
func KeysOf(method, key string) MethodKeys {
	if method == "" {
		return MethodKeys{key: key}
	}
	return MethodKeys{key, method, "methods." + method + "." + key, method + "." + key}
}

// Param is MethodParam(u, method, key) for k's method and key. It does not
// allocate.
func (k MethodKeys) Param(u *common.URL) (v string) {
	k.each(u, func(s string) bool { v = s; return s != "" })
	return v
}

// each calls f with the values MethodParam reads for k on u, in its order,
// until f returns true: each level (dubbo-go's methods.<m>.key, Java's
// <m>.key, then key) on the consumer's URL before the provider's for a
// shared key; on the consumer's URL alone for a consumer-only key (none
// when u carries no consumer); on u alone for a provider-only key.
func (k MethodKeys) each(u *common.URL, f func(v string) bool) {
	first, second := u, (*common.URL)(nil)
	switch c := Consumer(u); Whose(k.key) {
	case ConsumerOnly:
		if c == nil {
			return
		}
		first = c
	case Shared:
		if c != nil && c != u {
			first, second = c, u
		}
	}
	for _, on := range [2]*common.URL{first, second} {
		if on == nil || k.method == "" {
			continue
		}
		if f(on.GetParam(k.dubboGo, "")) || javaMethod(on, k.method) && f(on.GetParam(k.java, "")) {
			return
		}
	}
	for _, on := range [2]*common.URL{first, second} {
		if on != nil && f(on.GetParam(k.key, "")) {
			return
		}
	}
}

// In reports whether MethodParam(u, method, key) reads a method-level key
// of u rather than the service-level one. It does not allocate.
// The key is a shared one (a weight): the consumer's URL that u carries
// counts as u does.
func (k MethodKeys) In(u *common.URL) bool {
	if k.method == "" {
		return false
	}
	return k.on(u) || k.on(Consumer(u))
}

// on reports whether u itself (nil: no) has a method-level value of k.
func (k MethodKeys) on(u *common.URL) bool {
	return u != nil && (u.GetParam(k.dubboGo, "") != "" || javaMethod(u, k.method) && u.GetParam(k.java, "") != "")
}

// ServiceParam returns the service-level value of key on the provider URL
// u, or "": for parameters that have no method level (timestamp, warmup,
// release), as Dubbo Java reads them, each from its owner (Whose).
func ServiceParam(u *common.URL, key string) string { return MethodParam(u, "", key) }

// javaMethod tells whether Dubbo Java reads <method>.<key> parameters of u
// for method: always when u has no "methods" parameter, else only for the
// methods it lists (org.apache.dubbo.common.URL.toMethodParameters).
func javaMethod(u *common.URL, method string) bool {
	list := u.GetParam(constant.MethodsKey, "")
	if list == "" {
		return true
	}
	for m := range strings.SplitSeq(list, ",") {
		if m == method {
			return true
		}
	}
	return false
}

// MethodTimeout returns the call timeout of method that the provider URL u
// states, and whether it states a valid one; DefaultTimeout when it does
// not. It reads the keys of MethodParam in the same order and under the
// same rules (methods.<method>.timeout, <method>.timeout, timeout) and takes
// the first valid one, so an invalid method-level value falls back to the next. Both
// dubbo-go's duration strings ("3s", "500ms") and Dubbo Java's plain
// milliseconds ("3000") are understood. Like MethodParam, it is for
// snapshot builds.
func MethodTimeout(u *common.URL, method string) (d time.Duration, ok bool) {
	KeysOf(method, constant.TimeoutKey).each(u, func(v string) bool { d, ok = parseTimeout(v); return ok })
	if !ok {
		return DefaultTimeout, false
	}
	return d, true
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

// ActivesKey is the URL parameter that limits calls in flight per method.
const ActivesKey = "actives"

// Actives returns the limit of calls in flight of method that the provider
// URL u states (actives, read with MethodParam), or 0 for no limit.
func Actives(u *common.URL, method string) int64 {
	return ParseActives(MethodParam(u, method, ActivesKey))
}

// ParseActives reads an actives value: a positive integer is the limit;
// anything else (unset, 0, negative, not an integer) means no limit (0).
func ParseActives(raw string) int64 {
	if n, err := strconv.ParseInt(strings.TrimSpace(raw), 10, 64); err == nil && n > 0 {
		return n
	}
	return 0
}

// ParseDuration reads a positive duration of at most a year, "30s" or
// whole milliseconds as Dubbo Java writes them, as the timeout is read.
func ParseDuration(v string) (time.Duration, bool) { return parseTimeout(v) }
