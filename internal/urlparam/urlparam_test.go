package urlparam

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"dubbo.apache.org/dubbo-go/v3/common"
)

func TestMethodTimeout(t *testing.T) {
	for _, c := range []struct {
		params map[string]string
		want   time.Duration
		ok     bool
	}{
		{nil, DefaultTimeout, false},
		{map[string]string{"timeout": "5s"}, 5 * time.Second, true},
		{map[string]string{"timeout": "1500"}, 1500 * time.Millisecond, true}, // Dubbo Java: ms
		{map[string]string{"timeout": "5s", "methods.Say.timeout": "200ms"}, 200 * time.Millisecond, true},
		{map[string]string{"timeout": "5s", "methods.Other.timeout": "200ms"}, 5 * time.Second, true},
		{map[string]string{"timeout": "abc"}, DefaultTimeout, false},
		{map[string]string{"timeout": "-3s"}, DefaultTimeout, false},
		{map[string]string{"timeout": "0"}, DefaultTimeout, false},
		{map[string]string{"timeout": "99999999999999"}, DefaultTimeout, false},
		{map[string]string{"methods.Say.timeout": "bad", "timeout": "2s"}, 2 * time.Second, true},
	} {
		opts := []common.Option{}
		for k, v := range c.params {
			opts = append(opts, common.WithParamsValue(k, v))
		}
		u := common.NewURLWithOptions(opts...)
		d, ok := MethodTimeout(u, "Say")
		assert.Equal(t, c.ok, ok, "%v", c.params)
		assert.Equal(t, c.want, d, "%v", c.params)
	}
}

func TestMethodParam(t *testing.T) {
	u := common.NewURLWithOptions(common.WithParamsValue("k", "service"), common.WithParamsValue("methods.Say.k", "method"))
	assert.Equal(t, "method", MethodParam(u, "Say", "k"))
	assert.Equal(t, "service", MethodParam(u, "Other", "k"))
	assert.Equal(t, "service", MethodParam(u, "", "k"))
	assert.Equal(t, "", MethodParam(u, "Say", "missing"))
	assert.True(t, KeysOf("Say", "k").In(u))
	assert.False(t, KeysOf("Other", "k").In(u))
	assert.False(t, KeysOf("", "k").In(u))
}

// javaProvider is a provider URL as a Dubbo Java 3 provider registers it: a
// <dubbo:method name="sayHello" .../> setting becomes sayHello.<key>.
func javaProvider(t *testing.T, query string) *common.URL {
	t.Helper()
	u, err := common.NewURL("dubbo://10.0.0.7:20880/org.example.DemoService?anyhost=true&interface=org.example.DemoService&methods=sayHello,sayBye&release=3.3.6&side=provider&" + query)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestMethodParamReadsJavaSpelling(t *testing.T) {
	u := javaProvider(t, "weight=100&sayHello.weight=50&sayHello.hash.nodes=40&sayHello.actives=3")
	assert.Equal(t, "50", MethodParam(u, "sayHello", "weight"))
	assert.Equal(t, "40", MethodParam(u, "sayHello", "hash.nodes"))
	assert.Equal(t, "3", MethodParam(u, "sayHello", "actives"))
	assert.Equal(t, "100", MethodParam(u, "sayBye", "weight"), "another method: service level")
	assert.Equal(t, "", MethodParam(u, "sayBye", "actives"))
	assert.Equal(t, "100", MethodParam(u, "", "weight"))
	assert.True(t, KeysOf("sayHello", "weight").In(u))
	assert.False(t, KeysOf("sayBye", "weight").In(u))
	assert.False(t, KeysOf("sayHello", "weight").In(javaProvider(t, "sayHello.weight=")), "empty counts as absent")
	// Java reads <method>.<key> only for the methods the URL lists.
	assert.False(t, KeysOf("other", "weight").In(javaProvider(t, "other.weight=5")))
}

func TestMethodParamDubboGoSpellingWinsOverJava(t *testing.T) {
	for _, c := range []struct {
		query, want string
	}{
		{"k=service&sayHello.k=java&methods.sayHello.k=go", "go"},
		{"k=service&sayHello.k=java", "java"},
		{"k=service&methods.sayHello.k=go", "go"},
		{"k=service&sayHello.k=java&methods.sayHello.k=", "java"}, // empty counts as absent
		{"k=service&sayHello.k=&methods.sayHello.k=", "service"},
		{"k=service&sayBye.k=java&methods.sayBye.k=go", "service"},
		{"sayHello.k=java", "java"},
	} {
		u := javaProvider(t, c.query)
		assert.Equal(t, c.want, MethodParam(u, "sayHello", "k"), c.query)
	}
}

// Dubbo Java reads <method>.<key> only for a method that the URL's methods
// parameter lists, when it has one; dubbo-go's spelling has no such rule.
func TestMethodParamJavaSpellingFollowsMethodsList(t *testing.T) {
	u := javaProvider(t, "weight=100&sayHi.weight=50&methods.sayHi.actives=2")
	assert.Equal(t, "100", MethodParam(u, "sayHi", "weight"), "sayHi is not in methods=sayHello,sayBye")
	assert.Equal(t, "2", MethodParam(u, "sayHi", "actives"))

	u, err := common.NewURL("dubbo://10.0.0.7:20880/org.example.DemoService?weight=100&sayHi.weight=50")
	if err != nil {
		t.Fatal(err)
	}
	assert.Equal(t, "50", MethodParam(u, "sayHi", "weight"), "no methods parameter: every method")
}

// A dubbo-go consumer's own method timeout reaches the provider URL as
// methods.<m>.timeout through URL.MergeURL and wins over the Java
// provider's <m>.timeout, as a consumer setting does in Dubbo Java.
func TestConsumerMethodTimeoutWinsOverJavaProvidersAfterMerge(t *testing.T) {
	provider := javaProvider(t, "timeout=5000&sayHello.timeout=1500")
	consumer, err := common.NewURL("consumer://127.0.0.1/org.example.DemoService?interface=org.example.DemoService&methods.sayHello.timeout=250ms",
		common.WithMethods([]string{"sayHello"}))
	if err != nil {
		t.Fatal(err)
	}
	d, ok := MethodTimeout(provider.MergeURL(consumer), "sayHello")
	assert.True(t, ok)
	assert.Equal(t, 250*time.Millisecond, d)
	d, _ = MethodTimeout(provider, "sayHello")
	assert.Equal(t, 1500*time.Millisecond, d, "without the consumer's setting: the Java provider's")
}

func TestMethodTimeoutReadsJavaSpelling(t *testing.T) {
	for _, c := range []struct {
		query string
		want  time.Duration
		ok    bool
	}{
		{"timeout=5000&sayHello.timeout=1500", 1500 * time.Millisecond, true},
		{"timeout=5000&sayHello.timeout=1500&methods.sayHello.timeout=200ms", 200 * time.Millisecond, true},
		{"timeout=5000&sayHello.timeout=1500&methods.sayHello.timeout=bad", 1500 * time.Millisecond, true},
		{"timeout=5000&sayHello.timeout=bad", 5 * time.Second, true},
		{"sayHello.timeout=-1", DefaultTimeout, false},
		{"timeout=5000&sayBye.timeout=1500", 5 * time.Second, true},
	} {
		d, ok := MethodTimeout(javaProvider(t, c.query), "sayHello")
		assert.Equal(t, c.ok, ok, c.query)
		assert.Equal(t, c.want, d, c.query)
	}
}

// Service-level parameters are read at service level only: a method-level
// spelling does not stand in for them.
func TestServiceParam(t *testing.T) {
	u := javaProvider(t, "timestamp=1767322000000&sayHello.warmup=5000&methods.sayHello.warmup=6000")
	assert.Equal(t, "1767322000000", ServiceParam(u, "timestamp"))
	assert.Equal(t, "", ServiceParam(u, "warmup"))
	assert.Equal(t, "3.3.6", ServiceParam(u, "release"))
}

// Reading with keys built once allocates nothing per URL, whoever owns
// the key: the vote over a snapshot's providers reads every one.
func TestParamWithKeysAllocatesNothing(t *testing.T) {
	u, _ := common.NewURL("dubbo://127.0.0.1:20880/org.example.Greeter?methods.Say.hash.nodes=40&hash.nodes=80&lb.zone.local=a")
	for _, key := range []string{"hash.nodes", "lb.zone.local", "timestamp", "absent"} {
		keys := KeysOf("Say", key)
		if n := testing.AllocsPerRun(100, func() { _ = keys.Param(u) }); n != 0 {
			t.Errorf("%s: %.0f allocations a read, want 0", key, n)
		}
	}
	if got := KeysOf("Say", "hash.nodes").Param(u); got != "40" {
		t.Errorf("the method level first: got %q", got)
	}
}
