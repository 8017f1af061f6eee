package skeleton

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/dubbogo-lb/lb/internal/lblog"
	"github.com/dubbogo-lb/lb/internal/urlparam"
	"github.com/dubbogo-lb/lb/loadbalance/internal/member"
)

// A balancer parses its URL parameters (Params) when a snapshot is built,
// into a typed config and a list of problems (Problem), logged by Report.

// Problem describes a URL parameter whose value raw could not be used,
// because of why, and the value kept in its place.
func Problem(key, raw, why, kept string) string {
	return key + " " + strconv.Quote(raw) + " " + why + "; using " + kept
}

// Report logs the configuration problems of balancer name for snapshot s,
// one WARN line each, unless they are before, those of the one it replaces.
func Report(name string, s *member.Set, problems, before []string) {
	if slices.Equal(problems, before) {
		return
	}
	for _, p := range problems {
		lblog.Warnf("%s, service %s, method %s: %s", name, s.Invokers[0].GetURL().ServiceKey(), s.Method, p)
	}
}

// Params returns the URL parameters of the snapshot s by key ("" when
// unset), method level first, each from its owner (urlparam.Whose): a
// consumer-only key from the consumer; a shared key by the providers' vote
// (vote). A disagreement adds one entry to problems (nil: none kept).
func Params(s *member.Set, problems *[]string) func(key string) string {
	first := s.Invokers[0].GetURL()
	return func(key string) string {
		if urlparam.Whose(key) != urlparam.Shared {
			return urlparam.MethodParam(first, s.Method, key)
		}
		return vote(s, key, problems)
	}
}

// maxDissenters bounds the providers a disagreement names.
const maxDissenters = 3

// vote returns the value of key that the most providers of s read (unset
// is a value), ties broken by the smallest, so that the list's order does
// not matter, and names a few dissenters in problems.
func vote(s *member.Set, key string, problems *[]string) string {
	values := make([]string, len(s.Invokers))
	counts := map[string]int{}
	keys := urlparam.KeysOf(s.Method, key)
	for i, inv := range s.Invokers {
		values[i] = keys.Param(inv.GetURL())
		counts[values[i]]++
	}
	if len(counts) == 1 {
		return values[0]
	}
	var won string
	best := -1
	for v, n := range counts {
		if n > best || n == best && v < won {
			won, best = v, n
		}
	}
	if problems != nil {
		var names []string
		for i, v := range values {
			if v != won && len(names) < maxDissenters {
				names = append(names, s.Invokers[i].GetURL().Location+"="+strconv.Quote(v))
			}
		}
		more := ""
		if n := len(values) - best - len(names); n > 0 {
			more = " and " + strconv.Itoa(n) + " more"
		}
		*problems = append(*problems, fmt.Sprintf("providers disagree on %s; using %q, which %d of %d read (unset is a value); the others: %s%s",
			key, won, best, len(values), strings.Join(names, ", "), more))
	}
	return won
}
