package urlparam

import (
	"net/url"
	"testing"
	"time"

	"dubbo.apache.org/dubbo-go/v3/common"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// merged returns a provider URL with provider's params merged, as dubbo-go's
// registry directory merges it, with a marked reference URL with
// consumer's; and that reference URL.
func merged(t *testing.T, provider, consumer map[string]string) (*common.URL, *common.URL) {
	t.Helper()
	q := url.Values{}
	for k, v := range provider {
		q.Set(k, v)
	}
	p, err := common.NewURL("tri://10.0.0.1:20000/org.Greeter?" + q.Encode())
	require.NoError(t, err)
	cq := url.Values{}
	for k, v := range consumer {
		cq.Set(k, v)
	}
	c, err := common.NewURL("consumer://10.0.0.9/org.Greeter?" + cq.Encode())
	require.NoError(t, err)
	MarkConsumer(c)
	return p.MergeURL(c), c
}

func TestWhose(t *testing.T) {
	for key, want := range map[string]Owner{
		"lb.zone.local": ConsumerOnly, "lb.zone.callers": ConsumerOnly, "lb.zone.min-cluster-size": ConsumerOnly,
		"lb.zone.overprovisioning": ConsumerOnly, "outlier.rules": ConsumerOnly, "outlier.max-ejection-percent": ConsumerOnly,
		"loadbalance.fallback": ConsumerOnly, "hash.attachment": ConsumerOnly, "lb.load-report": ConsumerOnly,
		"loadaware.blackout": ConsumerOnly, "shortestresponse.slidePeriod": ConsumerOnly, "lb.subset.size": ConsumerOnly,
		"weight": Shared, "warmup": Shared, "timeout": Shared, ActivesKey: Shared, "hash.nodes": Shared,
		"hash.arguments": Shared, "loadbalance": Shared, "anything.else": Shared,
		"timestamp": ProviderOnly, ZoneKey: ProviderOnly, WeightFactorKey: ProviderOnly, "lb.capacity": ProviderOnly,
	} {
		assert.Equal(t, want, Whose(key), key)
	}
	for key, want := range map[string]bool{
		"outlier.rules": true, "methods.Say.outlier.rules": true, "Say.outlier.rules": true,
		"methods.Say.lb.zone.local": true, "Say.hash.attachment": true,
		"lb.zone": false, "Say.lb.zone": false, "methods.Say.weight": false, "hash.nodes": false,
	} {
		assert.Equal(t, want, IsConsumerOnly(key), key)
	}
}

// A consumer-only key that a provider registers is never read; the
// consumer's own value is, and without one the key reads as unset (its
// default applies).
func TestConsumerOnlyKeysComeFromTheConsumerAlone(t *testing.T) {
	hostile := map[string]string{
		"lb.zone.local": "evil", "lb.zone.min-cluster-size": "0", "lb.zone.callers": "evil:1",
		"outlier.rules": "none", "methods.Say.outlier.rules": "none", "Say.outlier.rules": "none",
	}
	u, _ := merged(t, hostile, map[string]string{"lb.zone.local": "az-a"})
	assert.Equal(t, "az-a", ServiceParam(u, "lb.zone.local"))
	assert.Empty(t, ServiceParam(u, "lb.zone.callers"), "the provider's callers")
	assert.Empty(t, ServiceParam(u, "lb.zone.min-cluster-size"), "the provider's minimum")
	assert.Empty(t, MethodParam(u, "Say", "outlier.rules"), "the provider turned ejection off")

	// The consumer's own values win at every level.
	u, _ = merged(t, hostile, map[string]string{"outlier.rules": "failure-percentage", "methods.Say.outlier.consecutive-failures": "7"})
	assert.Equal(t, "failure-percentage", MethodParam(u, "Say", "outlier.rules"))
	assert.Equal(t, "7", MethodParam(u, "Say", "outlier.consecutive-failures"))

	// A URL that carries no consumer: consumer-only keys read as unset.
	p, err := common.NewURL("tri://10.0.0.1:20000/org.Greeter?lb.zone.local=evil&outlier.rules=none")
	require.NoError(t, err)
	assert.Nil(t, Consumer(p))
	assert.Empty(t, ServiceParam(p, "lb.zone.local"))
	assert.Empty(t, MethodParam(p, "Say", "outlier.rules"))
}

// Shared keys follow Dubbo Java's precedence: each level (methods.<m>.key,
// <m>.key, key) the consumer's value before the provider's.
func TestSharedKeysFollowJavaPrecedence(t *testing.T) {
	for _, tc := range []struct {
		name               string
		provider, consumer map[string]string
		want               string
	}{
		{"provider only", map[string]string{"hash.nodes": "80"}, nil, "80"},
		{"consumer first", map[string]string{"hash.nodes": "80"}, map[string]string{"hash.nodes": "40"}, "40"},
		{"provider's method level before consumer's service level", map[string]string{"methods.Say.hash.nodes": "80"}, map[string]string{"hash.nodes": "40"}, "80"},
		{"provider's Java method level too", map[string]string{"Say.hash.nodes": "80"}, map[string]string{"hash.nodes": "40"}, "80"},
		{"consumer's method level first", map[string]string{"methods.Say.hash.nodes": "80"}, map[string]string{"methods.Say.hash.nodes": "20"}, "20"},
		{"consumer's Java method level before provider's", map[string]string{"methods.Say.hash.nodes": "80"}, map[string]string{"Say.hash.nodes": "20"}, "20"},
		{"neither", nil, nil, ""},
	} {
		u, _ := merged(t, tc.provider, tc.consumer)
		assert.Equal(t, tc.want, MethodParam(u, "Say", "hash.nodes"), tc.name)
	}
	// Typed readers follow the same order.
	u, _ := merged(t, map[string]string{"timeout": "9s", ActivesKey: "3"}, map[string]string{"methods.Say.timeout": "2s", ActivesKey: "5"})
	d, ok := MethodTimeout(u, "Say")
	assert.True(t, ok)
	assert.Equal(t, 2*time.Second, d)
	assert.Equal(t, int64(5), Actives(u, "Say"))
	// The consumer's method-level weight makes the weight method-level.
	u, _ = merged(t, map[string]string{"weight": "10"}, map[string]string{"methods.Say.weight": "3"})
	assert.True(t, KeysOf("Say", "weight").In(u))
	assert.False(t, KeysOf("Other", "weight").In(u))
}

// Provider-only keys are the provider's: its timestamp, not the
// consumer's start, which dubbo-go's reference URL also carries.
func TestProviderOnlyKeysAreTheProviders(t *testing.T) {
	u, _ := merged(t, map[string]string{"timestamp": "1700000000", ZoneKey: "az-b"}, map[string]string{"timestamp": "1800000000", ZoneKey: "az-a"})
	assert.Equal(t, "1700000000", ServiceParam(u, "timestamp"))
	assert.Equal(t, "az-b", ServiceParam(u, ZoneKey))
}

func TestConsumerTravelsThroughMergeURL(t *testing.T) {
	u, c := merged(t, map[string]string{ConsumerAttribute: "forged"}, nil)
	assert.Same(t, c, Consumer(u), "a parameter of that name is not the attribute")
	assert.Nil(t, Consumer(nil))
	MarkConsumer(nil) // no panic
}

func TestOverriddenNamesWhatTheProviderRegistered(t *testing.T) {
	u, _ := merged(t, map[string]string{
		"lb.zone.local": "evil", "methods.Say.outlier.rules": "none", ZoneKey: "az-b", "weight": "5",
		"loadbalance.fallback": "roundrobin",
	}, map[string]string{"loadbalance.fallback": "roundrobin", "lb.zone.callers": "a:1"})
	assert.Equal(t, []string{"lb.zone.local", "methods.Say.outlier.rules"}, Overridden(u),
		"the consumer's own callers and the same fallback are not the provider's")
	p, err := common.NewURL("tri://10.0.0.1:20000/org.Greeter?lb.zone.local=evil")
	require.NoError(t, err)
	assert.Nil(t, Overridden(p), "without a consumer nothing can be told apart")
}
