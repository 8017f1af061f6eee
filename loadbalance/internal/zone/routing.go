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

// The consumer's zone-aware routing parameters (consumer-only reference
// params, service level).
const (
	LocalKey            = "lb.zone.local"            // the consumer's zone: routing is on when it (or Env) names one
	CallersKey          = "lb.zone.callers"          // zone:share pairs ("az-1:60,az-2:40"); unset: Zone.Callers 0
	MinClusterSizeKey   = "lb.zone.min-cluster-size" // Options.MinClusterSize; 0: always
	OverprovisioningKey = "lb.zone.overprovisioning" // Options.Overprovisioning, in [1, 100]
	MemoryKey           = "lb.zone.memory"           // Remember's half-life ("10m"); "0": none
	Env                 = "DUBBOGO_LB_ZONE"          // names the consumer's zone when LocalKey is unset
)

// maxCount bounds MinClusterSizeKey.
const maxCount = 1 << 40

// Routing is a consumer's zone-aware routing configuration.
type Routing struct {
	Local   string             // "" turns zone-aware routing off
	Callers map[string]float64 // nil when unknown
	Options
	Memory time.Duration // Remember's half-life: 0 for DefaultMemory, negative for none
}

// ParseRouting reads the configuration from param (a key's value, ""
// when unset), env being the value of Env. A malformed value keeps its
// default and adds one entry to problems. It never panics.
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
