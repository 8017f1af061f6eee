// Package extension is the one import a dubbo-go application adds to use
// this module:
//
//	import _ "github.com/dubbogo-lb/lb/extension"
//
// Importing it registers, with dubbo-go's own extension registry, the
// active-count filter and every balancer of the module under the names
// below, none of which collides with a dubbo-go built-in (random,
// roundrobin, leastactive, consistenthashing, p2c, aliasmethod,
// interleavedweightedroundrobin). Pick a balancer per reference with
// loadbalance: NAME in the dubbo-go configuration, per method with the
// reference param methods.<method>.loadbalance: NAME (see
// MethodBalancersToParams), and enable the filter with filter: lbactive.
// CheckReferences checks the names at start-up, CheckRegistries the Nacos
// logins. It also registers the registry directory of the nacos protocol
// and the Nacos service discovery (application level), so that a consumer
// of Nacos never misses a provider and follows the Nacos console's weight,
// enable and drain (see docs/discovery.md), adds the balancers to describe.Default (what they
// decide, for a live page: see describe.Handler) and their metrics to
// dubbo-go's (package lbmetrics). It wraps dubbo-go's registry protocol,
// passing every call on, to record what a provider registers in Nacos, for
// KeepRegistered.
package extension

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"dubbo.apache.org/dubbo-go/v3/cluster/loadbalance"
	"dubbo.apache.org/dubbo-go/v3/common/constant"
	dgext "dubbo.apache.org/dubbo-go/v3/common/extension"
	dgfilter "dubbo.apache.org/dubbo-go/v3/filter"
	"dubbo.apache.org/dubbo-go/v3/global"
	"dubbo.apache.org/dubbo-go/v3/metadata/report"
	dgmetrics "dubbo.apache.org/dubbo-go/v3/metrics"
	"dubbo.apache.org/dubbo-go/v3/protocol/base"
	"dubbo.apache.org/dubbo-go/v3/protocol/protocolwrapper"
	// dubbo-go's Nacos metadata report, registry and service discovery:
	// imported so that their init runs before this package's, which wraps
	// the first and replaces the last.
	_ "dubbo.apache.org/dubbo-go/v3/metadata/report/nacos"
	_ "dubbo.apache.org/dubbo-go/v3/registry/nacos"

	"github.com/dubbogo-lb/lb/extension/internal/lbname"
	"github.com/dubbogo-lb/lb/extension/internal/nacosdiscovery"
	"github.com/dubbogo-lb/lb/filter"
	"github.com/dubbogo-lb/lb/filter/providerload"
	"github.com/dubbogo-lb/lb/internal/assembly/balancers"
	"github.com/dubbogo-lb/lb/loadbalance/describe"
	"github.com/dubbogo-lb/lb/loadbalance/lbenv"
	"github.com/dubbogo-lb/lb/loadbalance/lbmetrics"
	"github.com/dubbogo-lb/lb/loadbalance/ringhash"
)

// FilterName is the name of the active-count filter.
const FilterName = filter.Name

// LoadFilterName is the name of the provider filter that reports the
// provider's load (package providerload).
const LoadFilterName = providerload.Name

// FallbackKey is the reference param, "loadbalance.fallback", that names
// the balancer used for a provider that names a balancer this process does
// not know (one WARN per provider, service and name); default
// DefaultFallback.
const FallbackKey = lbname.FallbackKey

// DefaultFallback is the fallback balancer when FallbackKey is unset:
// dubbo-go's default, "random".
const DefaultFallback = lbname.DefaultFallback

// registered lists the names this package registers.
var registered []string

func init() {
	// Consumers of Nacos at interface level find every provider: dubbo-go
	// registers no directory for "nacos" (it warns and falls back to its
	// registry directory, whose Nacos listener can miss a provider at
	// start-up; see nacosdiscovery).
	dgext.SetDirectory(nacosdiscovery.Protocol, nacosdiscovery.NewDirectory(nacosdiscovery.Options{}))
	// Application level (registry-type: service or all): our Nacos service
	// discovery replaces dubbo-go's, registered under the same name by
	// dubbo-go's registry/nacos, imported above so that its init runs
	// first (the last registration wins). dubbo-go's reads before it
	// subscribes, keeps disabled instances, and writes the rounded
	// instance weight over the provider's weight.
	// It records what it registers for KeepRegistered (appRegistrations).
	dgext.SetServiceDiscovery(nacosdiscovery.Protocol, nacosdiscovery.NewServiceDiscovery(nacosdiscovery.Options{Registrations: appRegistrations}))
	// Subsetting (lb.subset.size) at application level: dubbo-go's
	// service-discovery directory, told of the reference's subset only.
	// The interface level draws its subset in the directory above.
	dgext.SetDirectory(constant.ServiceRegistryProtocol, nacosdiscovery.NewAppDirectory(nacosdiscovery.Options{}))
	describe.Default.SetSubsets(nacosdiscovery.Subsets)
	// The application's metadata, which dubbo-go publishes in Nacos before
	// it registers the instance, is tried again as registrations are.
	if f := dgext.GetMetadataReportFactory(nacosdiscovery.Protocol); f != nil {
		reports := nacosdiscovery.RetryingReports(f)
		dgext.SetMetadataReportFactory(nacosdiscovery.Protocol, func() report.MetadataReportFactory { return reports })
	}

	// A provider that names a balancer this consumer does not know never
	// panics it (dubbo-go looks the name up with MustGet): every provider
	// URL the registry directory refers goes through dubbo-go's "filter"
	// protocol, whose Refer the guard sees first (package lbname).
	dgext.SetProtocol(protocolwrapper.FILTER, func() base.Protocol {
		return lbname.Protocol(lbname.Default, protocolwrapper.GetProtocol())
	})
	// A reference's direct URLs (url: tri://host:port?loadbalance=...) are
	// referred with their own protocol, not "filter": the guard wraps
	// every protocol before each reference is referred.
	dgext.SetConfigPostProcessor("lbname", lbname.PostProcessor(lbname.Default))
	// The consumer's own policy (zone, ejection, fallback…) is read from
	// its reference URL, which every provider URL carries from here on,
	// never from what a provider registers (urlparam.Whose).
	dgext.SetConfigPostProcessor("lbconsumer", consumerMarker{})

	active := filter.New(filter.Options{})
	dgext.SetFilter(FilterName, func() dgfilter.Filter { return active })
	// The provider filter that answers with the provider's load.
	dgext.SetFilter(providerload.Name, func() dgfilter.Filter { return providerload.Default })

	// One singleton per balancer: dubbo-go calls the factory on every
	// invocation, and each balancer keeps its state per (service, method).
	for _, b := range balancers.All {
		register(b.Name, b.New(lbenv.Env{}))
	}
	// Dubbo Java's names, for providers that name their consumers'
	// balancer (loadbalance: consistenthash, shortestresponse, adaptive).
	register(ringhash.JavaName, ringhash.Java())

	// The balancers' figures on dubbo-go's metrics endpoint, when the
	// configuration enables metrics.
	dgmetrics.AddCollector(lbmetrics.Name, lbmetrics.CollectorFunc)
}

func register(name string, lb balancers.Balancer) {
	registered = append(registered, name)
	dgext.SetLoadbalance(name, func() loadbalance.LoadBalance { return lb })
	describe.Register(name, lb)
}

// Balancers returns the names of the balancers this package registered.
func Balancers() []string {
	out := append([]string(nil), registered...)
	sort.Strings(out)
	return out
}

// CheckBalancer returns an error naming the registered balancers when name
// is not one of them, nor a balancer registered by anyone else with
// dubbo-go (a fallback registered under a name a provider sent does not
// count: see FallbackKey). An empty name is dubbo-go's default (random) and is valid.
// Call it at start-up on configured names: dubbo-go itself only notices an
// unknown name on the first call, with a panic.
func CheckBalancer(name string) error {
	if name == "" || slices.Contains(dgext.GetAllLoadbalanceNames(), name) && !lbname.Default.IsFallback(name) {
		return nil
	}
	others := slices.DeleteFunc(dgext.GetAllLoadbalanceNames(), lbname.Default.IsFallback)
	sort.Strings(others)
	return fmt.Errorf("unknown load balancer %q; registered: %s", name, strings.Join(others, ", "))
}

// CheckReferences applies CheckBalancer to every balancer that refs, the
// consumer's references by name (dubbo.consumer.references), configure:
// per reference and per method. It returns nil when all are valid, else
// one error per bad name, each naming its reference and method.
func CheckReferences(refs map[string]*global.ReferenceConfig) error {
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(refs)) { // a stable message
		ref := refs[name]
		if ref == nil {
			continue
		}
		if err := CheckBalancer(ref.Loadbalance); err != nil {
			errs = append(errs, fmt.Errorf("reference %s: %w", name, err))
		}
		for _, m := range ref.MethodsConfig {
			if m == nil {
				continue
			}
			if err := CheckBalancer(m.LoadBalance); err != nil {
				errs = append(errs, fmt.Errorf("reference %s, method %s: %w", name, m.Name, err))
			}
		}
		for _, key := range slices.Sorted(maps.Keys(ref.Params)) {
			if method, ok := methodBalancerKey(key); ok {
				if err := CheckBalancer(ref.Params[key]); err != nil {
					errs = append(errs, fmt.Errorf("reference %s, method %s (params): %w", name, method, err))
				}
			}
		}
	}
	return errors.Join(errs...)
}

// CheckRegistries checks at start-up that every Nacos registry of regs
// (dubbo.registries, by id) takes its credentials: with a username, the
// server must take the login; without one, it must serve readers without
// a login. It returns nil when all do (or a server cannot be reached
// yet: a consumer may start before its Nacos), else one error per
// registry refused, each naming the registry and its server. dubbo-go
// itself only logs a refused login, and the consumer then waits for
// providers it never gets.
func CheckRegistries(regs map[string]*global.RegistryConfig) error {
	var errs []error
	for _, id := range slices.Sorted(maps.Keys(regs)) { // a stable message
		reg := regs[id]
		if reg == nil || reg.Protocol != nacosdiscovery.Protocol || reg.Address == "" {
			continue
		}
		if err := nacosdiscovery.CheckLogin(reg); err != nil {
			errs = append(errs, fmt.Errorf("registry %s: %w", id, err))
		}
	}
	return errors.Join(errs...)
}

// PreferApplicationLevel marks every Nacos registry of regs (the
// consumer's dubbo.registries) that has registry-type: all as preferred, so
// that each call is served by one level, never by both. With all, dubbo-go
// subscribes at application level and at interface level and puts its
// zone-aware cluster over the two: without a preferred registry it picks a
// level per call with the reference's balancer, whose state per service and
// method then flips between the two levels and the providers' (a rebuild per
// call, shares off: 86/14 measured for weights 3:1 under swrr). Preferred,
// the application level (dubbo-go lists it first) serves every call while
// it has a provider, the interface level otherwise: Dubbo Java's
// APPLICATION_FIRST, without its instance-count threshold. Call it on the
// consumer's registries before the client dials, like
// MethodBalancersToParams; with dubbo.Load, write preferred: true in the
// YAML instead.
func PreferApplicationLevel(regs map[string]*global.RegistryConfig) {
	for _, reg := range regs {
		if reg != nil && reg.Protocol == nacosdiscovery.Protocol && reg.RegistryType == constant.RegistryTypeAll {
			reg.Preferred = true
		}
	}
}

// MethodBalancersToParams copies the balancer of each method of each
// reference (references.<ref>.methods[].loadbalance) into the reference's
// params as methods.<method>.loadbalance, where it overrides a balancer
// the params set for the method, as in dubbo-go's own URL building.
// dubbo-go v3.3.2 drops the methods section of a reference when its
// Instance API dials an IDL service (global.ReferenceConfig.GetOptions
// does not copy it), so a per-method balancer written there is silently
// ignored; the params are carried to every invoker URL, where the cluster
// looks the method's balancer up. Call it on the consumer's references
// before the client dials, e.g. in a dubbo.InstanceOption after the YAML
// is loaded; with dubbo.Load, write the params form in the YAML instead.
func MethodBalancersToParams(refs map[string]*global.ReferenceConfig) {
	for _, ref := range refs {
		if ref == nil {
			continue
		}
		for _, m := range ref.MethodsConfig {
			if m == nil || m.Name == "" || m.LoadBalance == "" {
				continue
			}
			if ref.Params == nil {
				ref.Params = map[string]string{}
			}
			ref.Params["methods."+m.Name+".loadbalance"] = m.LoadBalance
		}
	}
}

// methodBalancerKey reports whether key is a reference param that sets a
// method's balancer, methods.<method>.loadbalance, and names the method.
func methodBalancerKey(key string) (method string, ok bool) {
	rest, ok := strings.CutPrefix(key, "methods.")
	if !ok {
		return "", false
	}
	method, ok = strings.CutSuffix(rest, ".loadbalance")
	return method, ok && method != ""
}
