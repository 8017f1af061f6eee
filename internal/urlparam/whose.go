package urlparam

import (
	"slices"
	"strings"

	"dubbo.apache.org/dubbo-go/v3/common"
	"dubbo.apache.org/dubbo-go/v3/common/constant"
)

// Owner says who may set a URL parameter that the module reads: the
// consumer alone, the provider alone, or either, the consumer's value
// first. dubbo-go's URL.MergeURL keeps the provider's value of every key
// the provider registered (but loadbalance, cluster, retries and timeout),
// so a provider URL as a balancer receives it mixes the two; the readers
// of this package take each key from its owner (Whose).
type Owner uint8

const (
	// Shared keys are those Dubbo lets a provider set for its consumers
	// (weight, warmup, timeout, actives, hash.nodes, hash.arguments,
	// loadbalance and any key this package does not know): read in Dubbo
	// Java's precedence, level by level, the consumer's value before the
	// provider's (methods.<m>.key, <m>.key, then key).
	Shared Owner = iota
	// ConsumerOnly keys are the consumer's policy (zone-aware routing,
	// outlier ejection, the fallback balancer, the hash key's attachment,
	// load reports, the adaptive balancers' windows): read from the
	// consumer's reference configuration alone, never from a provider.
	ConsumerOnly
	// ProviderOnly keys are facts about one provider (its export
	// timestamp, its zone, its weight factor, its capacity): read from the
	// provider URL.
	ProviderOnly
)

// String returns the owner's name, as logs and docs write it.
func (o Owner) String() string {
	switch o {
	case ConsumerOnly:
		return "consumer-only"
	case ProviderOnly:
		return "provider-only"
	}
	return "shared"
}

// consumerPrefixes are the prefixes of the consumer-only keys; ZoneKey
// ("lb.zone", the provider's own zone) is not one of them.
var consumerPrefixes = []string{
	"lb.zone.", "outlier.", "lb.subset.", "loadaware.", "shortestresponse.",
}

// consumerKeys are the consumer-only keys outside consumerPrefixes.
var consumerKeys = map[string]bool{
	"loadbalance.fallback": true, // the balancer for unknown provider-named ones
	"hash.attachment":      true, // ringhash's key source
	"lb.load-report":       true, // ask providers for load reports
}

// providerKeys are the provider-only keys.
var providerKeys = map[string]bool{
	constant.TimestampKey: true, // Dubbo Java drops the consumer's in its merge
	ZoneKey:               true,
	WeightFactorKey:       true,
	"lb.capacity":         true,
}

// Whose returns the owner of key, a service-level key (no methods.<m>. or
// <m>. prefix).
func Whose(key string) Owner {
	switch {
	case providerKeys[key]:
		return ProviderOnly
	case consumerKeys[key]:
		return ConsumerOnly
	}
	for _, p := range consumerPrefixes {
		if strings.HasPrefix(key, p) {
			return ConsumerOnly
		}
	}
	return Shared
}

// ConsumerAttribute is the URL attribute under which a reference's URL
// carries itself (MarkConsumer). dubbo-go's URL.MergeURL copies the
// reference's attributes onto every provider URL that lacks them, and a
// provider cannot set an attribute (registries, direct URLs and
// configurators carry parameters only), so a provider URL that holds it
// holds its consumer's own configuration.
const ConsumerAttribute = "dubbogo-lb.consumer"

// consumerRef is the value of ConsumerAttribute.
type consumerRef struct{ url *common.URL }

// MarkConsumer makes the reference URL ref carry itself under
// ConsumerAttribute, so that every provider URL merged with it tells the
// consumer's parameters from the provider's (Consumer). The extension
// package does it for every reference, from a dubbo-go config
// post-processor, before dubbo-go refers the reference. A nil ref is left
// alone.
func MarkConsumer(ref *common.URL) {
	if ref != nil {
		ref.SetAttribute(ConsumerAttribute, consumerRef{ref})
	}
}

// WithConsumer makes the provider URL u carry consumer as its reference's
// URL, as a merge with a marked reference does: for tests, simulators and
// code that builds provider URLs itself. It returns u.
func WithConsumer(u, consumer *common.URL) *common.URL {
	u.SetAttribute(ConsumerAttribute, consumerRef{consumer})
	return u
}

// Consumer returns the reference URL that the provider URL u carries
// (MarkConsumer), nil when it carries none: then the consumer-only keys
// read as unset and their defaults apply. It does not allocate.
func Consumer(u *common.URL) *common.URL {
	if u == nil {
		return nil
	}
	v, ok := u.GetAttribute(ConsumerAttribute)
	if !ok {
		return nil
	}
	r, _ := v.(consumerRef)
	return r.url
}

// Overridden returns the consumer-only keys (in any spelling: key,
// methods.<m>.key, <m>.key) that the provider URL u holds with a value its
// consumer's URL does not give them: keys the provider registered, which
// the readers of this package ignore. Sorted; nil when u carries no
// consumer (then no key can be told apart) or none.
func Overridden(u *common.URL) []string {
	c := Consumer(u)
	if c == nil || c == u {
		return nil
	}
	var out []string
	u.RangeParams(func(key, value string) bool {
		if value != "" && IsConsumerOnly(key) && c.GetParam(key, "") != value {
			out = append(out, key)
		}
		return true
	})
	slices.Sort(out)
	return out
}

// IsConsumerOnly reports whether key is a consumer-only key in one of its
// spellings (key, methods.<m>.key, <m>.key).
func IsConsumerOnly(key string) bool {
	if Whose(key) == ConsumerOnly {
		return true
	}
	if rest, ok := strings.CutPrefix(key, "methods."); ok {
		if _, k, ok := strings.Cut(rest, "."); ok && Whose(k) == ConsumerOnly {
			return true
		}
	}
	_, k, ok := strings.Cut(key, ".")
	return ok && Whose(k) == ConsumerOnly
}
