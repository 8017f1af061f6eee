package extension

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	cluster "dubbo.apache.org/dubbo-go/v3/cluster/cluster/base"
	"dubbo.apache.org/dubbo-go/v3/common"
	dgext "dubbo.apache.org/dubbo-go/v3/common/extension"
	_ "dubbo.apache.org/dubbo-go/v3/config_center/configurator" // dubbo-go's override rules
	"dubbo.apache.org/dubbo-go/v3/global"
	"dubbo.apache.org/dubbo-go/v3/protocol/base"
	"dubbo.apache.org/dubbo-go/v3/protocol/protocolwrapper"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dubbogo-lb/lb/internal/lblog"
)

func TestRegistersFilterAndBalancers(t *testing.T) {
	f, ok := dgext.GetFilter(FilterName)
	require.True(t, ok)
	assert.NotNil(t, f)
	builtins := []string{"random", "roundrobin", "leastactive", "consistenthashing", "p2c", "aliasmethod", "interleavedweightedroundrobin"}
	require.NotEmpty(t, Balancers())
	for _, name := range Balancers() {
		assert.NotContains(t, builtins, name, "collides with a dubbo-go built-in")
		lb := dgext.GetLoadbalance(name)
		require.NotNil(t, lb, name)
		assert.Same(t, lb, dgext.GetLoadbalance(name), "%s: one singleton", name)
		assert.NoError(t, CheckBalancer(name))
	}
}

// The import registers exactly these names, spelled out here rather than
// read from the package's constants: a balancer or filter that stops being
// registered, or is renamed, fails this test (the tests that use a
// balancer by name would otherwise lose it quietly).
func TestRegisteredNamesArePinned(t *testing.T) {
	balancers := []string{"adaptive", "consistenthash", "fewestactive", "lalb", "loadaware", "ringhash", "rtadaptive", "shortestresponse", "swrr", "warmrandom"}
	filters := []string{"lbactive", "lbload"}
	assert.Equal(t, balancers, Balancers(), "the balancers this package registers")
	for _, name := range balancers {
		assert.NotPanics(t, func() { assert.NotNil(t, dgext.GetLoadbalance(name), name) }, "balancer %s", name)
	}
	for _, name := range filters {
		f, ok := dgext.GetFilter(name)
		assert.True(t, ok && f != nil, "filter %s is not registered", name)
	}
}

func TestCheckBalancerNamesTheChoices(t *testing.T) {
	assert.NoError(t, CheckBalancer(""))
	err := CheckBalancer("fastest-please")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `"fastest-please"`)
	for _, name := range Balancers() {
		assert.Contains(t, err.Error(), name)
	}
}

func TestCheckReferencesNamesReferenceAndMethod(t *testing.T) {
	refs := map[string]*global.ReferenceConfig{
		"Good": {Loadbalance: "lalb", MethodsConfig: []*global.MethodConfig{{Name: "Say", LoadBalance: "ringhash"}, {Name: "Other"}}},
		"Nil":  nil,
	}
	assert.NoError(t, CheckReferences(refs))
	assert.NoError(t, CheckReferences(nil))

	refs["Params"] = &global.ReferenceConfig{Params: map[string]string{"methods.Say.loadbalance": "lalb", "timeout": "1s"}}
	assert.NoError(t, CheckReferences(refs))

	refs["BadRef"] = &global.ReferenceConfig{Loadbalance: "lalbb"}
	refs["BadParam"] = &global.ReferenceConfig{Params: map[string]string{"methods.Say.loadbalance": "rthash"}}
	refs["BadMethod"] = &global.ReferenceConfig{MethodsConfig: []*global.MethodConfig{nil, {Name: "Hello", LoadBalance: "swr"}}}
	err := CheckReferences(refs)
	require.Error(t, err)
	msg := err.Error()
	assert.Contains(t, msg, `reference BadRef: unknown load balancer "lalbb"`)
	assert.Contains(t, msg, `reference BadMethod, method Hello: unknown load balancer "swr"`)
	assert.Contains(t, msg, `reference BadParam, method Say (params): unknown load balancer "rthash"`)
	assert.Less(t, strings.Index(msg, "BadMethod"), strings.Index(msg, "BadRef"), "sorted by reference")
	assert.NotContains(t, msg, "Good")
}

func TestMethodBalancersToParams(t *testing.T) {
	refs := map[string]*global.ReferenceConfig{
		"A": {MethodsConfig: []*global.MethodConfig{{Name: "Hello", LoadBalance: "lalb"}, {Name: "Bye"}, nil, {LoadBalance: "swrr"}}},
		"B": {
			Params:        map[string]string{"methods.Hello.loadbalance": "ringhash"},
			MethodsConfig: []*global.MethodConfig{{Name: "Hello", LoadBalance: "lalb"}, {Name: "Bye", LoadBalance: "swrr"}},
		},
		"C": nil,
	}
	MethodBalancersToParams(refs)
	assert.Equal(t, map[string]string{"methods.Hello.loadbalance": "lalb"}, refs["A"].Params)
	assert.Equal(t, map[string]string{"methods.Hello.loadbalance": "lalb", "methods.Bye.loadbalance": "swrr"}, refs["B"].Params,
		"the methods section overrides the params")
}

// CheckRegistries asks every Nacos registry, and only those, and names the
// one whose server refuses its login.
func TestCheckRegistriesNamesTheRefusingRegistry(t *testing.T) {
	asked := map[string]int{}
	nacos := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked[r.URL.Path]++
		if strings.HasSuffix(r.URL.Path, "/login") {
			w.WriteHeader(http.StatusInternalServerError) // Nacos 3 on a wrong password
			return
		}
		w.WriteHeader(http.StatusForbidden) // and on a read without a login
	}))
	defer nacos.Close()
	addr := nacos.Listener.Addr().String()
	regs := map[string]*global.RegistryConfig{
		"refused": {Protocol: "nacos", Address: addr, Username: "u", Password: "wrong"},
		"zk":      {Protocol: "zookeeper", Address: addr, Username: "u", Password: "wrong"},
		"none":    nil,
	}
	err := CheckRegistries(regs)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "registry refused: Nacos at http://"+addr+"/nacos: login as \"u\" failed")
	assert.NotContains(t, err.Error(), "zk")
	assert.Equal(t, map[string]int{"/nacos/v3/auth/user/login": 1, "/nacos/v1/ns/instance/list": 1}, asked)

	delete(regs, "refused")
	assert.NoError(t, CheckRegistries(regs))
}

// Only Nacos registries of type all become preferred.
func TestPreferApplicationLevel(t *testing.T) {
	regs := map[string]*global.RegistryConfig{
		"all":       {Protocol: "nacos", RegistryType: "all"},
		"service":   {Protocol: "nacos", RegistryType: "service"},
		"interface": {Protocol: "nacos", RegistryType: "interface"},
		"zk":        {Protocol: "zookeeper", RegistryType: "all"},
		"nil":       nil,
	}
	PreferApplicationLevel(regs)
	for id, want := range map[string]bool{"all": true, "service": false, "interface": false, "zk": false} {
		if got := regs[id].Preferred; got != want {
			t.Errorf("registry %s: preferred %v, want %v", id, got, want)
		}
	}
}

// The Nacos service discovery that dubbo-go creates for application level
// is this module's, not dubbo-go's (registered under the same name).
func TestNacosServiceDiscoveryIsOurs(t *testing.T) {
	u, err := common.NewURL("service-discovery-registry://127.0.0.1:1?registry=nacos&registry.group=G")
	require.NoError(t, err)
	sd, err := dgext.GetServiceDiscovery(u)
	require.NoError(t, err)
	assert.Contains(t, sd.String(), "github.com/dubbogo-lb/lb")
	require.NoError(t, sd.Destroy()) // made no client: nothing to close
}

// dubbo-go's Nacos metadata reports are wrapped so that a publication
// Nacos fails is tried again (nacosdiscovery.RetryingReports).
func TestNacosMetadataReportsAreTriedAgain(t *testing.T) {
	f := dgext.GetMetadataReportFactory("nacos")
	require.NotNil(t, f)
	assert.Equal(t, "*nacosdiscovery.retryingFactory", fmt.Sprintf("%T", f))
}

// fakeProtocol refers any URL as a bare invoker, without dialing.
type fakeProtocol struct{ base.Protocol }

func (fakeProtocol) Refer(u *common.URL) base.Invoker { return base.NewBaseInvoker(u) }

// fakeProvider returns the provider URL raw of the protocol "lbfake",
// whose Refer makes a plain invoker, and the lines logged until the test
// ends.
func fakeProvider(t *testing.T, raw string) (*common.URL, func() []string) {
	var lines []string
	t.Cleanup(lblog.Capture(func(l string) { lines = append(lines, l) }))
	dgext.SetProtocol("lbfake", func() base.Protocol { return fakeProtocol{} })
	u, err := common.NewURL(raw)
	require.NoError(t, err)
	return u, func() []string { return lines }
}

// TestProviderNamingAnUnknownBalancerNeverPanics refers a provider URL as
// dubbo-go's registry directory does (through the "filter" protocol) and
// looks its balancers up as dubbo-go's cluster does: no panic, one WARN.
func TestProviderNamingAnUnknownBalancerNeverPanics(t *testing.T) {
	u, logs := fakeProvider(t, "lbfake://10.0.0.7:20000/org.Greeter?loadbalance=java-team-lb&methods.Hi.loadbalance=ringhash")
	inv := dgext.GetProtocol(protocolwrapper.FILTER).Refer(u)
	require.NotNil(t, inv)
	for _, m := range []string{"Say", "Hi"} {
		lb := cluster.GetLoadBalance(inv, m)
		assert.Same(t, inv, lb.Select([]base.Invoker{inv}, nil))
	}
	dgext.GetProtocol(protocolwrapper.FILTER).Refer(u.Clone()) // dubbo-go refers again on a change
	require.Len(t, logs(), 1, "%q", logs())
	assert.Contains(t, logs()[0], `provider 10.0.0.7:20000 names load balancer "java-team-lb" for service org.Greeter`)
	assert.Error(t, CheckBalancer("java-team-lb"), "a fallback is no balancer to configure")
	assert.NotContains(t, CheckBalancer("nosuch").Error(), "java-team-lb")
}

// TestOverrideFromTheConfigCenterIsChecked applies a rule of the
// configuration center with dubbo-go's own override configurator, as its
// registry directory does to each merged provider URL before it refers it
// through the "filter" protocol: the name the rule sets is checked (one
// WARN, no panic); the provider named a known balancer.
func TestOverrideFromTheConfigCenterIsChecked(t *testing.T) {
	u, logs := fakeProvider(t, "lbfake://10.0.0.8:20000/org.Greeter?loadbalance=random&side=consumer")
	rule, err := common.NewURL("override://0.0.0.0:0/org.Greeter?loadbalance=config-center-typo&category=configurators")
	require.NoError(t, err)
	dgext.GetDefaultConfiguratorFunc()(rule).Configure(u)
	require.Equal(t, "config-center-typo", u.GetParam("loadbalance", ""), "the rule applies")

	inv := dgext.GetProtocol(protocolwrapper.FILTER).Refer(u)
	require.NotNil(t, inv)
	assert.Same(t, inv, cluster.GetLoadBalance(inv, "Say").Select([]base.Invoker{inv}, nil))
	require.Len(t, logs(), 1, "%q", logs())
	assert.Contains(t, logs()[0], `provider 10.0.0.8:20000 names load balancer "config-center-typo" for service org.Greeter`)
}

// The values the doc comments of the aliased constants state (go doc shows
// an alias's name, not its value).
func TestDocumentedConstantValues(t *testing.T) {
	assert.Equal(t, "loadbalance.fallback", FallbackKey)
	assert.Equal(t, "random", DefaultFallback)
	assert.Equal(t, 10*time.Second, DefaultKeepInterval)
}
