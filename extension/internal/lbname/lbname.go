// Package lbname keeps a provider's choice of balancer from breaking a Go
// consumer. In Dubbo a provider may name the balancer of its consumers
// (loadbalance at service level, <method>.loadbalance per method), and
// dubbo-go keeps the provider's name whenever the consumer's reference
// names none (common.URL.MergeURL). dubbo-go v3.3.2 then looks the name
// up on every call (cluster/cluster/base.GetLoadBalance ->
// extension.GetLoadbalance -> Registry.MustGet), which panics on a name it
// does not know: a Java team's own balancer, a typo, a name of a newer
// Dubbo.
//
// Guard.Check sees every provider URL before dubbo-go makes an invoker of
// it (Protocol wraps dubbo-go's "filter" protocol, through which the
// registry directory refers every provider, at both levels and after the
// configuration center's overrides are applied). For each name that no
// balancer is registered under, it registers a fallback under that name,
// which hands each call to the consumer's fallback balancer (FallbackKey,
// default DefaultFallback), and logs one WARN per (service, method,
// name), naming the provider it came from. Nothing is rewritten: dubbo-go compares each new provider URL
// with its invoker's and refers the provider again when they differ, so a
// URL changed after the fact would make a new connection on every
// notification. A reference's direct URLs are referred with their own
// protocol, not "filter": WrapProtocols (run by PostProcessor before each
// reference is referred) puts the same check on every protocol.
// JavaMethodSpelling, applied where the provider URL is built (the Nacos
// discovery), gives Dubbo Java's method-level spelling the name dubbo-go
// reads. DESIGN.md beside this file lists the paths.
package lbname

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"dubbo.apache.org/dubbo-go/v3/cluster/loadbalance"
	// dubbo-go's default balancer, the default fallback: registered
	// whether the application imports dubbo-go's balancers or not.
	_ "dubbo.apache.org/dubbo-go/v3/cluster/loadbalance/random"
	"dubbo.apache.org/dubbo-go/v3/common"
	"dubbo.apache.org/dubbo-go/v3/common/config"
	"dubbo.apache.org/dubbo-go/v3/common/constant"
	dgext "dubbo.apache.org/dubbo-go/v3/common/extension"
	"dubbo.apache.org/dubbo-go/v3/protocol/base"

	"github.com/dubbogo-lb/lb/internal/lblog"
	"github.com/dubbogo-lb/lb/internal/urlmap"
	"github.com/dubbogo-lb/lb/internal/urlparam"
)

const (
	// FallbackKey is the reference param (consumer-only: read from the
	// consumer's own URL, never a provider's) that names the balancer a consumer
	// uses when a provider names one it does not know.
	FallbackKey = "loadbalance.fallback"
	// DefaultFallback is the fallback when FallbackKey is unset or names
	// no known balancer: dubbo-go's default balancer, what the consumer
	// would use had the provider named none.
	DefaultFallback = constant.DefaultLoadBalance
)

// JavaMethodSpelling copies each balancer that u names in Dubbo Java's
// method-level spelling, <method>.loadbalance, to dubbo-go's,
// methods.<method>.loadbalance, the one dubbo-go's cluster reads, unless u
// has that already: dubbo-go's spelling wins, as in urlparam.MethodParam. A
// <method>.loadbalance counts, as in Dubbo Java, only when u has no
// "methods" parameter or lists the method in it. Call it where the
// provider URL is built, before dubbo-go sees it.
func JavaMethodSpelling(u *common.URL) {
	var listed []string
	if l := u.GetParam(constant.MethodsKey, ""); l != "" {
		listed = strings.Split(l, ",")
	}
	var add [][2]string
	u.RangeParams(func(key, value string) bool {
		method, ok := strings.CutSuffix(key, "."+constant.LoadbalanceKey)
		if !ok || value == "" || method == "" || strings.HasPrefix(key, "methods.") || method == "loadbalance" {
			return true
		}
		if listed != nil && !slices.Contains(listed, method) {
			return true
		}
		add = append(add, [2]string{"methods." + key, value})
		return true
	})
	for _, kv := range add {
		if u.GetParam(kv[0], "") == "" {
			u.SetParam(kv[0], kv[1])
		}
	}
}

// Named is a balancer name a provider URL states, and where.
type Named struct {
	// Name is the balancer's name.
	Name string
	// Method is the method it is named for; "" at service level.
	Method string
}

// Names returns the balancers u names for dubbo-go's cluster:
// loadbalance, then methods.<method>.loadbalance for every method, by
// method.
func Names(u *common.URL) []Named {
	var out []Named
	u.RangeParams(func(key, value string) bool {
		if value == "" {
			return true
		}
		if key == constant.LoadbalanceKey {
			out = append(out, Named{Name: value})
		} else if rest, ok := strings.CutPrefix(key, "methods."); ok {
			if m, ok := strings.CutSuffix(rest, "."+constant.LoadbalanceKey); ok && m != "" {
				out = append(out, Named{Name: value, Method: m})
			}
		}
		return true
	})
	slices.SortFunc(out, func(a, b Named) int { return strings.Compare(a.Method, b.Method) })
	return out
}

// Guard registers a fallback under every unknown balancer name it sees.
// The zero value is not usable: call New.
type Guard struct {
	// known reports whether a balancer is registered under a name.
	known func(name string) bool
	// register registers lb under name with dubbo-go.
	register func(name string, lb loadbalance.LoadBalance)
	// lookup returns the balancer registered under a known name.
	lookup func(name string) loadbalance.LoadBalance

	mu        sync.Mutex
	fallbacks map[string]bool // the names registered as fallbacks
	// limit is the most names registered as fallbacks (FallbackLimit);
	// capped is set once a name beyond it was seen (mu).
	limit  int
	capped bool
	// warned holds the "service|method|name" keys logged, at most
	// warnedLimit, then starts afresh (mu).
	warned map[string]struct{}
	byURL  urlmap.Store[common.URL, atomic.Pointer[loadbalance.LoadBalance]]
	def    atomic.Pointer[loadbalance.LoadBalance] // DefaultFallback's balancer
}

// New returns a Guard over dubbo-go's registry of balancers.
func New() *Guard {
	return &Guard{
		known: func(name string) bool { return slices.Contains(dgext.GetAllLoadbalanceNames(), name) },
		register: func(name string, lb loadbalance.LoadBalance) {
			dgext.SetLoadbalance(name, func() loadbalance.LoadBalance { return lb })
		},
		lookup:    dgext.GetLoadbalance,
		fallbacks: map[string]bool{},
		limit:     FallbackLimit,
		warned:    map[string]struct{}{},
	}
}

// FallbackLimit is the most unknown balancer names a Guard registers with
// dubbo-go (whose registry never forgets a name): the names providers
// state are strangers' strings. Beyond it, Check points the provider URL's
// unknown name at its fallback directly (the URL then names the fallback),
// and one WARN says so.
const FallbackLimit = 64

// warnedLimit bounds the (service, method, name) triples whose WARN a
// Guard remembers having logged; past it, it starts afresh.
const warnedLimit = 4096

// Default is the guard that package extension installs.
var Default = New()

// IsFallback reports whether name is only a fallback the guard registered,
// not a balancer.
func (g *Guard) IsFallback(name string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.fallbacks[name]
}

// Check makes every balancer name of the provider URL u safe to look up:
// an unknown name gets a fallback registered under it, and one WARN per
// (service, method, name), naming the first provider seen, says so: a
// fleet of providers that name it logs one line, not one per provider. It also records u's fallback, which
// the fallback balancer hands u's calls to. Call it before dubbo-go makes
// an invoker of u.
func (g *Guard) Check(u *common.URL) {
	var fb *loadbalance.LoadBalance
	for _, n := range Names(u) {
		unknown, registered, first := g.unknown(n.Name)
		if !unknown {
			continue
		}
		if !registered {
			g.redirect(u, n, first)
			continue
		}
		if fb == nil {
			fb = g.fallbackOf(u)
			g.byURL.Get(u).Store(fb)
		}
		if !g.firstWarning(u.ServiceKey() + "|" + n.Method + "|" + n.Name) {
			continue
		}
		where := "service " + u.ServiceKey()
		if n.Method != "" {
			where = "method " + n.Method + " of " + where
		}
		lblog.Warnf("provider %s names load balancer %q for %s, which this consumer does not know; using %q instead (the reference param %s chooses another)",
			u.Location, n.Name, where, g.fallbackName(u), FallbackKey)
	}
}

// firstWarning reports whether key was not logged yet, and remembers it.
func (g *Guard) firstWarning(key string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, dup := g.warned[key]; dup {
		return false
	}
	if len(g.warned) >= warnedLimit {
		clear(g.warned)
	}
	g.warned[key] = struct{}{}
	return true
}

// unknown reports whether name is not a balancer, registering the
// fallback under it the first time while fewer than FallbackLimit names
// are; registered is false for a name beyond, and first true for the
// first such name.
func (g *Guard) unknown(name string) (unknown, registered, first bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.fallbacks[name] {
		return true, true, false
	}
	if g.known(name) {
		return false, false, false
	}
	if len(g.fallbacks) >= g.limit {
		first = !g.capped
		g.capped = true
		return true, false, first
	}
	g.fallbacks[name] = true
	g.register(name, &fallback{g: g})
	return true, true, false
}

// redirect makes n, an unknown name of u beyond FallbackLimit, name u's
// fallback instead, so that dubbo-go's cluster finds a balancer without a
// new name in its registry. dubbo-go refers such a provider again at each
// notification (its URL differs from the one notified): the price of a
// provider fleet that names more unknown balancers than the limit.
func (g *Guard) redirect(u *common.URL, n Named, first bool) {
	key := constant.LoadbalanceKey
	if n.Method != "" {
		key = "methods." + n.Method + "." + constant.LoadbalanceKey
	}
	fb := g.fallbackName(u)
	u.SetParam(key, fb)
	if first {
		lblog.Warnf("providers name more than %d load balancers this consumer does not know (provider %s names %q for service %s); the URLs of further unknown names name their fallback %q instead (the reference param %s chooses another)",
			g.limit, u.Location, n.Name, u.ServiceKey(), fb, FallbackKey)
	}
}

// fallbackName is the name of u's fallback balancer.
func (g *Guard) fallbackName(u *common.URL) string {
	name := urlparam.ServiceParam(u, FallbackKey) // the consumer's alone
	g.mu.Lock()
	ok := name != "" && !g.fallbacks[name] && g.known(name)
	g.mu.Unlock()
	if !ok {
		return DefaultFallback
	}
	return name
}

// fallbackOf returns u's fallback balancer.
func (g *Guard) fallbackOf(u *common.URL) *loadbalance.LoadBalance {
	lb := g.lookup(g.fallbackName(u))
	return &lb
}

// balancer returns the fallback balancer of the provider URL u: the one
// Check recorded, else DefaultFallback's.
func (g *Guard) balancer(u *common.URL) loadbalance.LoadBalance {
	if p := g.byURL.Load(u); p != nil {
		if lb := p.Load(); lb != nil {
			return *lb
		}
	}
	lb := g.def.Load()
	if lb == nil {
		l := g.lookup(DefaultFallback)
		lb = &l
		g.def.Store(lb)
	}
	return *lb
}

// fallback is what the guard registers under an unknown name: it hands
// each call to the fallback of the first provider's URL, which Check
// recorded. It takes no lock and allocates nothing beyond the fallback's
// own Select.
type fallback struct{ g *Guard }

// Select implements loadbalance.LoadBalance.
func (f *fallback) Select(invokers []base.Invoker, inv base.Invocation) base.Invoker {
	if len(invokers) == 0 {
		return nil
	}
	return f.g.balancer(invokers[0].GetURL()).Select(invokers, inv)
}

// Protocol wraps p, a dubbo-go protocol through which consumers refer
// providers, so that every provider URL it refers is checked by g first.
// The wrapper keeps the optional capability dubbo-go looks for on a
// protocol, base.HTTPHandlerHost (triple's), when p has it.
func Protocol(g *Guard, p base.Protocol) base.Protocol {
	w := &protocol{Protocol: p, g: g}
	if h, ok := p.(base.HTTPHandlerHost); ok {
		return &hostProtocol{protocol: w, HTTPHandlerHost: h}
	}
	return w
}

type protocol struct {
	base.Protocol
	g *Guard
}

// hostProtocol is a wrapped protocol that hosts HTTP handlers.
type hostProtocol struct {
	*protocol
	base.HTTPHandlerHost
}

// guarded marks the protocols Protocol returns.
func (*protocol) guarded() {}

// Refer implements base.Protocol.
func (p *protocol) Refer(u *common.URL) base.Invoker {
	if u != nil {
		p.g.Check(u)
		WarnOverridden(u)
	}
	return p.Protocol.Refer(u)
}

// wrapMu serializes WrapProtocols.
var wrapMu sync.Mutex

// WrapProtocols wraps with Protocol(g, ·) every protocol registered with
// dubbo-go that is not wrapped yet, but the registry protocols (they
// refer a registry, whose directory refers each provider through the
// "filter" protocol). dubbo-go refers a reference's direct URLs (url:
// tri://host:port?...) with the URL's own protocol, not through "filter",
// and its cluster then looks the URL's balancer up as for any provider.
// A wrapped protocol is the instance its factory returned, which every
// dubbo-go protocol keeps as a singleton (its exporters live in it), with
// the optional capability dubbo-go asserts on a protocol kept (Protocol).
// Idempotent; call it before references are referred (PostProcessor does,
// before each).
func WrapProtocols(g *Guard) {
	wrapMu.Lock()
	defer wrapMu.Unlock()
	for _, name := range dgext.GetAllProtocolNames() {
		if name == constant.RegistryProtocol || name == constant.ServiceRegistryProtocol {
			continue
		}
		p := dgext.GetProtocol(name)
		if _, done := p.(interface{ guarded() }); done || p == nil {
			continue
		}
		w := Protocol(g, p)
		dgext.SetProtocol(name, func() base.Protocol { return w })
	}
}

// PostProcessor is a dubbo-go config post-processor that calls
// WrapProtocols(g) before each reference is referred (dubbo-go calls it
// with the reference's URL right before it refers the reference's URLs),
// so that a protocol registered after this package's users ran their init
// is wrapped too.
func PostProcessor(g *Guard) config.ConfigPostProcessor { return postProcessor{g} }

type postProcessor struct{ g *Guard }

func (p postProcessor) PostProcessReferenceConfig(*common.URL) { WrapProtocols(p.g) }

func (postProcessor) PostProcessServiceConfig(*common.URL) {}

// WarnOverridden logs one WARN line when the provider URL u, about to be
// referred, holds consumer-only keys (urlparam.Whose) that its provider
// registered: the consumer ignores them (urlparam.Overridden).
func WarnOverridden(u *common.URL) {
	if keys := urlparam.Overridden(u); len(keys) > 0 {
		lblog.Warnf("provider %s of service %s registers %s, which only the consumer sets; ignored",
			u.Location, u.ServiceKey(), strings.Join(keys, ", "))
	}
}
