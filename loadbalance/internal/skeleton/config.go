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

// The configuration of a balancer for a (service, method) comes from URL
// parameters, read when its snapshot is built: each balancer parses them
// into a typed config (its config.go) with a list of problems, each a
// value it could not use and the value it kept instead (Problem), and
// reports them with Report, in one format for every balancer.

// Problem describes a URL parameter whose value raw could not be used,
// because of why, and the value kept in its place.
func Problem(key, raw, why, kept string) string {
	return key + " " + strconv.Quote(raw) + " " + why + "; using " + kept
}

// Report logs problems, those of the configuration of the snapshot s of
// the balancer name, one WARN line each:
// "<name>, service <service key>, method <method>: <problem>", unless they
// are those of the snapshot s replaces, before (nil for none): a
// configuration's problems are reported once, not on every membership
// change or warmup refresh.
func Report(name string, s *member.Set, problems, before []string) {
	if slices.Equal(problems, before) {
		return
	}
	for _, p := range problems {
		lblog.Warnf("%s, service %s, method %s: %s", name, s.Invokers[0].GetURL().ServiceKey(), s.Method, p)
	}
}

// Params returns the URL parameters of the snapshot s by key, "" when
// absent, each from its owner (urlparam.Whose), method level first
// (methods.<m>.key, Java's <m>.key, then key): a consumer-only key from the
// consumer's own configuration; a shared key, which each provider may
// register, by a vote that the order of the list cannot change: the value
// (unset counting as one) for which the most providers read, ties broken by
// the smallest. Where the providers disagree, Params appends to problems
// (nil: none kept) one entry naming the value used and a few dissenters.
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

// vote returns the value of the shared key that the most providers of s
// read, ties broken by the smallest, and describes a disagreement in
// problems.
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
