package skeleton

import (
	"slices"
	"strconv"

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
// absent: from its first provider's URL, as Dubbo reads them, method level
// first (methods.<m>.key, Java's <m>.key, then key).
func Params(s *member.Set) func(key string) string {
	u := s.Invokers[0].GetURL()
	return func(key string) string { return urlparam.MethodParam(u, s.Method, key) }
}
