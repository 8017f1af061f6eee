package lbname

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"dubbo.apache.org/dubbo-go/v3/cluster/cluster/base"
	"dubbo.apache.org/dubbo-go/v3/cluster/loadbalance"
	_ "dubbo.apache.org/dubbo-go/v3/cluster/loadbalance/random"
	_ "dubbo.apache.org/dubbo-go/v3/cluster/loadbalance/roundrobin"
	"dubbo.apache.org/dubbo-go/v3/common"
	"dubbo.apache.org/dubbo-go/v3/common/constant"
	dgext "dubbo.apache.org/dubbo-go/v3/common/extension"
	pbase "dubbo.apache.org/dubbo-go/v3/protocol/base"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dubbogo-lb/lb/internal/lblog"
	"github.com/dubbogo-lb/lb/internal/urlparam"
)

func providerURL(t *testing.T, raw string) *common.URL {
	t.Helper()
	u, err := common.NewURL(raw)
	require.NoError(t, err)
	urlparam.MarkConsumer(u) // a merged URL whose values are all the consumer's
	return u
}

func TestJavaMethodSpelling(t *testing.T) {
	u := providerURL(t, "tri://127.0.0.1:20000/org.Greeter?sayHello.loadbalance=shortestresponse&bye.loadbalance=adaptive"+
		"&methods.bye.loadbalance=roundrobin&loadbalance=consistenthash&sayHello.weight=7")
	JavaMethodSpelling(u)
	assert.Equal(t, "shortestresponse", u.GetMethodParam("sayHello", "loadbalance", ""), "Java's spelling, read as dubbo-go's")
	assert.Equal(t, "roundrobin", u.GetMethodParam("bye", "loadbalance", ""), "dubbo-go's spelling wins")
	assert.Equal(t, "consistenthash", u.GetParam("loadbalance", ""), "the service level stays")
	assert.Empty(t, u.GetParam("methods.sayHello.weight", ""), "only the balancer is copied")

	// A "methods" list limits Java's method-level keys to its methods, as
	// Dubbo Java reads them.
	u = providerURL(t, "tri://127.0.0.1:20000/org.Greeter?methods=sayHello&sayHello.loadbalance=adaptive&hash.loadbalance=x")
	JavaMethodSpelling(u)
	assert.Equal(t, "adaptive", u.GetMethodParam("sayHello", "loadbalance", ""))
	assert.Empty(t, u.GetMethodParam("hash", "loadbalance", ""), "not a method of the provider")

	// Idempotent: the same URL built twice compares equal, so dubbo-go
	// refers the provider once.
	a := providerURL(t, "tri://127.0.0.1:20000/org.Greeter?sayHello.loadbalance=adaptive")
	b := providerURL(t, "tri://127.0.0.1:20000/org.Greeter?sayHello.loadbalance=adaptive")
	JavaMethodSpelling(a)
	JavaMethodSpelling(b)
	JavaMethodSpelling(b)
	assert.True(t, common.IsEquals(a, b))
}

// pickLast picks the last provider and records, in last, its name.
type pickLast struct{ name, last string }

func (p *pickLast) Select(invokers []pbase.Invoker, _ pbase.Invocation) pbase.Invoker {
	p.last = p.name
	return invokers[len(invokers)-1]
}

// guard returns a Guard over a registry of its own holding names, and the
// WARN lines it logs.
func guard(t *testing.T, names ...string) (*Guard, map[string]loadbalance.LoadBalance, *[]string) {
	reg := map[string]loadbalance.LoadBalance{}
	for _, n := range names {
		reg[n] = &pickLast{name: n}
	}
	g := New()
	g.known = func(n string) bool { _, ok := reg[n]; return ok }
	g.register = func(n string, lb loadbalance.LoadBalance) { reg[n] = lb }
	g.lookup = func(n string) loadbalance.LoadBalance { return reg[n] }
	var lines []string
	t.Cleanup(lblog.Capture(func(l string) { lines = append(lines, l) }))
	return g, reg, &lines
}

func TestUnknownNameFallsBackWithOneWarnPerServiceAndName(t *testing.T) {
	g, reg, lines := guard(t, "random", "roundrobin")
	p1 := providerURL(t, "tri://10.0.0.1:20000/org.Greeter?loadbalance=teamlb&methods.bye.loadbalance=typo&methods.hi.loadbalance=roundrobin")
	p2 := providerURL(t, "tri://10.0.0.2:20000/org.Greeter?loadbalance=teamlb")
	other := providerURL(t, "tri://10.0.0.1:20000/org.Other?loadbalance=teamlb&"+FallbackKey+"=roundrobin")
	for range 3 { // every notification refers again
		g.Check(p1)
		g.Check(p2)
		g.Check(other)
	}
	require.Len(t, *lines, 3, "%q", *lines) // p2 names teamlb for the same service as p1
	assert.Contains(t, (*lines)[0], `provider 10.0.0.1:20000 names load balancer "teamlb" for service org.Greeter`)
	assert.Contains(t, strings.Join(*lines, "\n"), `names load balancer "typo" for method bye of service org.Greeter`)
	assert.Contains(t, (*lines)[2], `for service org.Other, which this consumer does not know; using "roundrobin"`)
	assert.Contains(t, (*lines)[0], `using "random"`)

	require.Contains(t, reg, "teamlb")
	require.Contains(t, reg, "typo")
	assert.True(t, g.IsFallback("teamlb"))
	assert.False(t, g.IsFallback("roundrobin"))

	// The fallback hands a provider's calls to its own fallback.
	one := []pbase.Invoker{pbase.NewBaseInvoker(p1), pbase.NewBaseInvoker(p2)}
	assert.Nil(t, reg["teamlb"].Select(nil, nil))
	got := reg["teamlb"].Select(one, nil)
	assert.Same(t, one[1], got)
	assert.Equal(t, "random", reg["random"].(*pickLast).last)
	reg["teamlb"].Select([]pbase.Invoker{pbase.NewBaseInvoker(other)}, nil)
	assert.Equal(t, "roundrobin", reg["roundrobin"].(*pickLast).last)
	// A URL never checked (a direct URL) gets the default.
	reg["random"].(*pickLast).last = ""
	reg["teamlb"].Select([]pbase.Invoker{pbase.NewBaseInvoker(providerURL(t, "tri://10.0.0.9:1/org.X"))}, nil)
	assert.Equal(t, "random", reg["random"].(*pickLast).last)
}

func TestFallbackParamThatIsNoBalancerGivesTheDefault(t *testing.T) {
	g, _, lines := guard(t, "random")
	g.Check(providerURL(t, "tri://10.0.0.1:20000/org.Greeter?loadbalance=teamlb&"+FallbackKey+"=nosuch"))
	g.Check(providerURL(t, "tri://10.0.0.2:20000/org.Greeter?loadbalance=typo&"+FallbackKey+"=teamlb"))
	require.Len(t, *lines, 2)
	for _, l := range *lines {
		assert.Contains(t, l, `using "random"`)
	}
}

func TestKnownNamesAreLeftAlone(t *testing.T) {
	g, reg, lines := guard(t, "random", "roundrobin")
	g.Check(providerURL(t, "tri://10.0.0.1:20000/org.Greeter?loadbalance=roundrobin&methods.hi.loadbalance=random"))
	assert.Empty(t, *lines)
	assert.Len(t, reg, 2)
	assert.Zero(t, g.byURL.Len())
}

// TestDubboGoFindsTheFallback goes through dubbo-go's own registry and
// cluster lookup: without the guard it panics.
func TestDubboGoFindsTheFallback(t *testing.T) {
	defer lblog.Capture(func(string) {})()
	u := providerURL(t, "tri://10.0.0.1:20000/org.Greeter?loadbalance=lbname-test-unknown&methods.hi.loadbalance=lbname-test-typo")
	inv := pbase.NewBaseInvoker(u)
	require.Panics(t, func() { base.GetLoadBalance(inv, "Say") }, "dubbo-go panics on an unknown name")
	Default.Check(u)
	for _, m := range []string{"Say", "hi"} {
		lb := base.GetLoadBalance(inv, m)
		require.NotNil(t, lb)
		assert.Same(t, inv, lb.Select([]pbase.Invoker{inv}, nil))
	}
	names := dgext.GetAllLoadbalanceNames()
	assert.Contains(t, names, "lbname-test-typo")
}

// referProtocol makes a base invoker of each URL it refers.
type referProtocol struct{ pbase.Protocol }

func (referProtocol) Refer(u *common.URL) pbase.Invoker { return pbase.NewBaseInvoker(u) }

// hostingProtocol hosts HTTP handlers, as triple does.
type hostingProtocol struct{ referProtocol }

var errHosted = errors.New("hosted")

func (hostingProtocol) HostHTTPHandler(*common.URL, http.Handler) error { return errHosted }

// TestWrapProtocolsGuardsDirectURLs: every protocol, as a direct URL uses
// it, checks the URLs it refers once wrapped; wrapping again adds no
// layer, a protocol that hosts HTTP handlers (triple) still does, and the
// registry protocols are left alone.
func TestWrapProtocolsGuardsDirectURLs(t *testing.T) {
	g, reg, lines := guard(t, "random")
	for _, name := range []string{"lbname-direct", "lbname-host", constant.RegistryProtocol} {
		require.NotContains(t, dgext.GetAllProtocolNames(), name)
		var p pbase.Protocol = referProtocol{}
		if name == "lbname-host" {
			p = hostingProtocol{}
		}
		dgext.SetProtocol(name, func() pbase.Protocol { return p })
		t.Cleanup(func() { dgext.UnregisterProtocol(name) })
	}
	pp := PostProcessor(g)
	pp.PostProcessServiceConfig(nil) // a provider's export: nothing to do
	pp.PostProcessReferenceConfig(nil)
	WrapProtocols(g)

	p := dgext.GetProtocol("lbname-direct")
	w, ok := p.(*protocol)
	require.True(t, ok, "wrapped: %T", p)
	assert.IsType(t, referProtocol{}, w.Protocol, "one layer, however often it is wrapped")
	assert.IsType(t, referProtocol{}, dgext.GetProtocol(constant.RegistryProtocol))
	h, ok := dgext.GetProtocol("lbname-host").(pbase.HTTPHandlerHost)
	require.True(t, ok, "triple's capability kept")
	assert.Equal(t, errHosted, h.HostHTTPHandler(nil, nil))
	assert.IsType(t, hostingProtocol{}, dgext.GetProtocol("lbname-host").(*hostProtocol).Protocol, "one layer")

	u := providerURL(t, "lbname-direct://10.0.0.3:20000/org.Greeter?loadbalance=direct-typo")
	inv := p.Refer(u)
	require.Len(t, *lines, 1)
	assert.Contains(t, (*lines)[0], `provider 10.0.0.3:20000 names load balancer "direct-typo" for service org.Greeter`)
	assert.Same(t, inv, reg["direct-typo"].Select([]pbase.Invoker{inv}, nil))
}

// Past FallbackLimit unknown names, no name is registered: the URL names
// its fallback instead, and one WARN says so.
func TestUnknownNamesBeyondTheLimitAreNotRegistered(t *testing.T) {
	g, reg, lines := guard(t, "random", "roundrobin")
	for i := range FallbackLimit {
		g.Check(providerURL(t, "tri://10.0.0.1:20000/org.S"+strconv.Itoa(i)+"?loadbalance=lb"+strconv.Itoa(i)))
	}
	require.Len(t, reg, FallbackLimit+2)
	*lines = nil
	over := providerURL(t, "tri://10.0.0.1:20000/org.Over?loadbalance=one-too-many&methods.m.loadbalance=two-too-many&"+FallbackKey+"=roundrobin")
	g.Check(over)
	g.Check(providerURL(t, "tri://10.0.0.2:20000/org.Over2?loadbalance=three-too-many"))
	assert.Len(t, reg, FallbackLimit+2, "nothing more registered")
	assert.Equal(t, "roundrobin", over.GetParam("loadbalance", ""))
	assert.Equal(t, "roundrobin", over.GetParam("methods.m.loadbalance", ""))
	require.Len(t, *lines, 1, "%q", *lines)
	assert.Contains(t, (*lines)[0], "more than 64 load balancers")
	assert.False(t, g.IsFallback("one-too-many"))
}
