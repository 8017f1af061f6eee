package urlparam

import (
	"strconv"
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

func TestParseOutlier(t *testing.T) {
	parse := func(kv ...string) (Outlier, []string) {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return ParseOutlier(func(k string) string { return m[k] })
	}
	o, problems := parse()
	assert.Equal(t, DefaultOutlier, o)
	assert.Empty(t, problems)
	assert.True(t, o.Enabled())
	assert.False(t, o.Periodic())
	assert.EqualValues(t, 5, o.ConsecutiveFailures)

	o, problems = parse(OutlierRulesKey, " Failure-Percentage , success-rate", OutlierIntervalKey, "1500",
		OutlierMaxEjectedKey, "12.5%", OutlierSuccessRateStdevFactorKey, "2.5", OutlierErrorsKey, "unknown, biz-error ,3")
	assert.Empty(t, problems)
	assert.Zero(t, o.ConsecutiveFailures, "not among the rules")
	assert.True(t, o.FailurePercentage.Enabled && o.SuccessRate.Enabled && o.Periodic())
	assert.Equal(t, 1500*time.Millisecond, o.Interval, "plain milliseconds, as Dubbo Java writes durations")
	assert.Equal(t, 12.5, o.MaxEjectionPercent)
	assert.Equal(t, 2.5, o.SuccessRate.StdevFactor)
	assert.Equal(t, AlwaysCounted|1<<CodeUnknown|1<<CodeBizError|1<<3, o.Counted, "the list replaces the default codes")

	o, _ = parse(OutlierRulesKey, "none")
	assert.False(t, o.Enabled())
	o, _ = parse(OutlierErrorsKey, "none")
	assert.Equal(t, AlwaysCounted, o.Counted)
	o, _ = parse(OutlierErrorsKey, "all")
	assert.Equal(t, AllCounted, o.Counted)

	for _, c := range []struct {
		key, value, why string
	}{
		{OutlierConsecutiveKey, "0", "using 5"},
		{OutlierConsecutiveKey, "five", "using 5"},
		{OutlierIntervalKey, "-10s", "using 10s"},
		{OutlierBaseEjectionKey, "0", "using 30s"},
		{OutlierMaxEjectionKey, "2y", "using 5m0s"},
		{OutlierMaxEjectedKey, "101", "using 10"},
		{OutlierPanicKey, "NaN", "using 50"},
		{OutlierFailurePercentThresholdKey, "-1%", "using 85"},
		{OutlierSuccessRateStdevFactorKey, "0", "using 1.9"},
		{OutlierSuccessRateRequestVolumeKey, "1.5", "using 100"},
		{OutlierRulesKey, "all", "using consecutive-failures"},
		{OutlierRulesKey, "none,success-rate", "using none"},
		{OutlierErrorsKey, "internal,oops", `skipped "oops"`},
	} {
		o, problems := parse(c.key, c.value)
		if assert.Len(t, problems, 1, "%s=%s", c.key, c.value) {
			assert.Contains(t, problems[0], c.key+" "+strconv.Quote(c.value))
			assert.Contains(t, problems[0], c.why)
		}
		if c.key == OutlierErrorsKey {
			assert.Equal(t, AlwaysCounted|1<<CodeInternal, o.Counted)
		} else if c.key != OutlierRulesKey || c.value == "all" {
			assert.Equal(t, DefaultOutlier, o, "%s=%s: the default stays", c.key, c.value)
		}
	}
}

func TestZone(t *testing.T) {
	for _, c := range []struct{ param, cluster, want string }{
		{"", "", ""}, {"", "DEFAULT", ""}, {"", "az-1", "az-1"}, {" az-2 ", "az-1", "az-2"}, {"az-2", "DEFAULT", "az-2"}, {"  ", " az-1", "az-1"},
	} {
		if got := Zone(c.param, c.cluster); got != c.want {
			t.Errorf("Zone(%q, %q) = %q, want %q", c.param, c.cluster, got, c.want)
		}
	}
}

func TestParseZoneRouting(t *testing.T) {
	params := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	z, problems := ParseZoneRouting(params(), "")
	if z.Local != "" || len(problems) != 0 {
		t.Errorf("unset: %+v %v, want off, no problem", z, problems)
	}
	z, _ = ParseZoneRouting(params(), " az-env ")
	if z.Local != "az-env" {
		t.Errorf("from the environment: %q", z.Local)
	}
	z, problems = ParseZoneRouting(params(ZoneLocalKey, "az-1", ZoneCallersKey, "az-1:60, az-2:40,bad,:3,az-3:-1,az-4:NaN",
		ZoneMinClusterSizeKey, "0", ZoneOverprovisioningKey, "2"), "az-env")
	if z.Local != "az-1" || z.Callers["az-1"] != 60 || z.Callers["az-2"] != 40 || len(z.Callers) != 2 ||
		z.MinClusterSize != -1 || z.Overprovisioning != 2 || len(problems) != 4 {
		t.Errorf("configured: %+v, problems %q", z, problems)
	}
	z, problems = ParseZoneRouting(params(ZoneLocalKey, "a", ZoneCallersKey, "a:0", ZoneMinClusterSizeKey, "-2", ZoneOverprovisioningKey, "0.5"), "")
	if z.Callers != nil || z.MinClusterSize != 0 || z.Overprovisioning != 0 || len(problems) != 3 {
		t.Errorf("bad values: %+v, problems %q; want defaults and three problems", z, problems)
	}
	for raw, want := range map[string]time.Duration{"": 0, "0": -1, "90s": 90 * time.Second, "600000": 10 * time.Minute} {
		if z, problems = ParseZoneRouting(params(ZoneMemoryKey, raw), ""); z.Memory != want || len(problems) != 0 {
			t.Errorf("%s %q: %v, problems %q; want %v", ZoneMemoryKey, raw, z.Memory, problems, want)
		}
	}
	if z, problems = ParseZoneRouting(params(ZoneMemoryKey, "-5m"), ""); z.Memory != 0 || len(problems) != 1 {
		t.Errorf("%s -5m: %v, problems %q; want the default and a problem", ZoneMemoryKey, z.Memory, problems)
	}
}

func FuzzParseZoneRouting(f *testing.F) {
	f.Add("az-1", "az-1:60,az-2:40", "6", "1.4", "10m")
	f.Fuzz(func(t *testing.T, local, callers, size, over, memory string) {
		m := map[string]string{ZoneLocalKey: local, ZoneCallersKey: callers, ZoneMinClusterSizeKey: size, ZoneOverprovisioningKey: over, ZoneMemoryKey: memory}
		z, _ := ParseZoneRouting(func(k string) string { return m[k] }, "")
		for name, share := range z.Callers {
			if !(share >= 0) || name == "" {
				t.Fatalf("callers %v", z.Callers)
			}
		}
		if z.Overprovisioning != 0 && !(z.Overprovisioning >= 1) {
			t.Fatalf("overprovisioning %v", z.Overprovisioning)
		}
		if z.Memory < -1 || z.Memory > 365*24*time.Hour {
			t.Fatalf("memory %v", z.Memory)
		}
	})
}

// The wait before each retry of a registration triples from nacos.retry-wait
// up to 30 s, or stays at a longer nacos.retry-wait.
func TestNacosRetryBackoff(t *testing.T) {
	ms := time.Millisecond
	for _, c := range []struct {
		wait time.Duration
		want []time.Duration // before retries 1, 2, ...
	}{
		{10 * ms, []time.Duration{10 * ms, 30 * ms, 90 * ms, 270 * ms, 810 * ms, 2430 * ms, 7290 * ms, 21870 * ms, 30000 * ms, 30000 * ms, 30000 * ms}},
		{1500 * ms, []time.Duration{1500 * ms, 4500 * ms, 13500 * ms, 30000 * ms, 30000 * ms}},
		{45 * time.Second, []time.Duration{45 * time.Second, 45 * time.Second}},
		{0, []time.Duration{0, 0, 0}},
	} {
		r := NacosRetry{Tries: len(c.want), Wait: c.wait}
		for i, want := range c.want {
			if got := r.Before(i + 1); got != want {
				t.Errorf("wait %v: %v before retry %d; want %v", c.wait, got, i+1, want)
			}
		}
	}
	if got := (NacosRetry{Wait: time.Minute}).Before(100); got != time.Minute {
		t.Errorf("the longest wait before the 100th retry: %v; want 1m0s", got)
	}
}

// A report or registry without a URL gets the default retries.
func TestReadNacosRetryWithoutURL(t *testing.T) {
	if r, problems := ReadNacosRetry(nil); r != (NacosRetry{Tries: defaultNacosRetries, Wait: defaultNacosRetryWait}) || len(problems) != 0 {
		t.Errorf("ReadNacosRetry(nil) = %+v, %q; want the defaults", r, problems)
	}
}
