package zone

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dubbogo-lb/lb/internal/urlparam"
)

// The consumer's zone-aware routing parameters: reference params, read
// from the consumer's own URL at service level (consumer-only:
// urlparam.Whose).
const (
	// LocalKey names the consumer's own zone; zone-aware routing is on
	// when it (or Env) names one.
	LocalKey = "lb.zone.local"
	// CallersKey gives the share of the calls each zone's consumers
	// send, as zone:share pairs ("az-1:60,az-2:40"); unset: in proportion
	// to each zone's providers.
	CallersKey = "lb.zone.callers"
	// MinClusterSizeKey is the smallest number of providers for which
	// zones count (default 6, Envoy's).
	MinClusterSizeKey = "lb.zone.min-cluster-size"
	// OverprovisioningKey is the overprovisioning factor (>= 1,
	// default 1.4, Envoy's).
	OverprovisioningKey = "lb.zone.overprovisioning"
	// MemoryKey is the half-life of a zone's provisioned weight once
	// its providers leave, when the callers are not configured: a
	// duration ("10m"), or "0" to take the callers from the providers
	// listed now (default 10m).
	MemoryKey = "lb.zone.memory"
	// Env is the environment variable that names the consumer's zone
	// when LocalKey is unset.
	Env = "DUBBOGO_LB_ZONE"
)

// maxCount bounds MinClusterSizeKey.
const maxCount = 1 << 40

// Routing is a consumer's zone-aware routing configuration.
type Routing struct {
	// Local is the consumer's zone; "" turns zone-aware routing off.
	Local string
	// Callers maps a zone to the share of the calls its consumers send
	// (any unit); nil when unknown.
	Callers map[string]float64
	// MinClusterSize and Overprovisioning as package zone's Options (0:
	// its defaults).
	MinClusterSize   int
	Overprovisioning float64
	// Memory is the half-life of a zone's provisioned weight (package
	// zone's Remember): 0 for its default, negative for none.
	Memory time.Duration
}

// ParseRouting reads the configuration from param (the value of a
// key, "" when unset: the consumer's reference params, urlparam.ServiceParam
// of a provider URL), env being the value of Env. A malformed value is
// dropped (its default applies) and problems says so, one entry per value.
// It never panics.
func ParseRouting(param func(key string) string, env string) (z Routing, problems []string) {
	z.Local = strings.TrimSpace(param(LocalKey))
	if z.Local == "" {
		z.Local = strings.TrimSpace(env)
	}
	if raw := strings.TrimSpace(param(CallersKey)); raw != "" {
		z.Callers = map[string]float64{}
		for _, pair := range strings.Split(raw, ",") {
			name, share, ok := strings.Cut(pair, ":")
			name = strings.TrimSpace(name)
			f, err := strconv.ParseFloat(strings.TrimSpace(share), 64)
			if !ok || name == "" || err != nil || !(f >= 0) || math.IsInf(f, 0) {
				problems = append(problems, fmt.Sprintf("%s: %q is not zone:share with a share >= 0; ignored", CallersKey, pair))
				continue
			}
			z.Callers[name] += f
		}
		if !slices.ContainsFunc(slices.Collect(maps.Values(z.Callers)), func(f float64) bool { return f > 0 }) {
			if len(problems) == 0 {
				problems = append(problems, fmt.Sprintf("%s: %q gives no zone a share; callers taken in proportion to providers", CallersKey, raw))
			}
			z.Callers = nil
		}
	}
	if raw := strings.TrimSpace(param(MinClusterSizeKey)); raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil || n < 0 || n > maxCount {
			problems = append(problems, fmt.Sprintf("%s: %q is not a count >= 0; using 6", MinClusterSizeKey, raw))
		} else if n == 0 {
			z.MinClusterSize = -1 // always zone-aware
		} else {
			z.MinClusterSize = n
		}
	}
	if raw := strings.TrimSpace(param(OverprovisioningKey)); raw != "" {
		f, err := strconv.ParseFloat(raw, 64)
		if err != nil || !(f >= 1) || f > 100 {
			problems = append(problems, fmt.Sprintf("%s: %q is not a factor in [1, 100]; using 1.4", OverprovisioningKey, raw))
		} else {
			z.Overprovisioning = f
		}
	}
	if raw := strings.TrimSpace(param(MemoryKey)); raw != "" {
		if raw == "0" {
			z.Memory = -1
		} else if d, ok := urlparam.ParseDuration(raw); ok {
			z.Memory = d
		} else {
			problems = append(problems, fmt.Sprintf("%s: %q is not a duration of at most a year (or 0 for none); using 10m", MemoryKey, raw))
		}
	}
	return z, problems
}
