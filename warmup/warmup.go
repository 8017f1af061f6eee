package warmup

import (
	"math"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"dubbo.apache.org/dubbo-go/v3/common"
	"dubbo.apache.org/dubbo-go/v3/common/constant"

	"github.com/dubbogo-lb/lb/internal/urlparam"
)

const (
	// DefaultWeight is the weight of a provider that states none.
	DefaultWeight = 100.0
	// maxWeight is the largest weight accepted; larger values are invalid.
	maxWeight = 1e6
	// defaultPeriod is the warmup period of a provider that states none
	// (Dubbo's ten minutes).
	defaultPeriod = 10 * time.Minute
	// millisThreshold separates timestamps in seconds from milliseconds.
	millisThreshold = 1e11
	// dubboGoRelease prefixes the release parameter of dubbo-go providers.
	dubboGoRelease = "dubbo-golang"
)

// InvalidWeights counts weight parameters that were replaced by
// DefaultWeight because they were malformed or out of range.
var InvalidWeights atomic.Int64

// Meta is what a provider URL says about the provider's weight and age.
type Meta struct {
	// Weight is the full weight, after the weight policy.
	Weight float64
	// Start is when the provider started; the zero Time means unknown,
	// and the provider is then treated as warm.
	Start time.Time
	// Period is the warmup period; 0 disables warmup.
	Period time.Duration
	// Problem says why a parameter was replaced by a default, or is empty.
	Problem string
}

// Options configure warmup. The zero value is Dubbo's linear ramp,
// refreshed every 100 ms. Uptimes are read on the balancer's wall clock
// (lbenv.Env.Wall).
type Options struct {
	// Aggression bends the ramp as in Envoy's slow start: the weight
	// fraction is (uptime/period)^(1/Aggression). 1 (the default, used for
	// any value <= 0 or not finite) is linear; above 1 ramps faster early.
	Aggression float64
	// MinPercent is the least share, in percent of its full weight, that
	// a warming provider gets. Default 0: only Dubbo's floor of one weight
	// unit applies. Values outside [0, 100] are clamped.
	MinPercent float64
	// RefreshStep is how often balancers recompute warm weights while some
	// provider warms up; default 100 ms. Between steps they
	// reuse the weights they computed, so a pick never parses a URL.
	RefreshStep time.Duration
}

// defaultRefreshStep is how often warm weights are recomputed while some
// provider is warming up.
const defaultRefreshStep = 100 * time.Millisecond

// WithDefaults returns o with RefreshStep set when it was not.
func (o Options) WithDefaults() Options {
	if o.RefreshStep <= 0 {
		o.RefreshStep = defaultRefreshStep
	}
	return o
}

// Parse reads the weight, timestamp and warmup parameters of the provider
// URL u for method (empty for service level), at time now.
func Parse(u *common.URL, method string, now time.Time) Meta {
	raw := urlparam.MethodParam(u, method, constant.WeightKey)
	goProvider := strings.HasPrefix(urlparam.ServiceParam(u, constant.ReleaseKey), dubboGoRelease)
	var m Meta
	m.Weight, m.Problem = parseWeight(raw, goProvider)
	factor, problem := ParseFactor(urlparam.ServiceParam(u, urlparam.WeightFactorKey))
	if problem != "" {
		m.Problem = strings.TrimPrefix(m.Problem+"; "+problem, "; ")
	}
	m.Weight = min(m.Weight*factor, maxWeight)
	start, period, problem := parseAge(urlparam.ServiceParam(u, constant.TimestampKey), urlparam.ServiceParam(u, constant.WarmupKey), now)
	m.Start, m.Period = start, period
	if problem != "" {
		m.Problem = strings.TrimPrefix(m.Problem+"; "+problem, "; ")
	}
	return m
}

// parseWeight applies the weight policy to a raw weight parameter.
// zeroMeansUnset is true for providers that write 0 when no weight was set.
func parseWeight(raw string, zeroMeansUnset bool) (weight float64, problem string) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return DefaultWeight, ""
	}
	w, err := strconv.ParseFloat(raw, 64)
	switch {
	case err != nil && !isRangeError(err):
		problem = "weight " + strconv.Quote(raw) + " is not a number"
	case math.IsNaN(w) || math.IsInf(w, 0) || w > maxWeight:
		problem = "weight " + strconv.Quote(raw) + " is out of range (0.." + strconv.FormatFloat(maxWeight, 'g', -1, 64) + ")"
	case w < 0:
		problem = "weight " + strconv.Quote(raw) + " is negative"
	case w == 0 && zeroMeansUnset:
		return DefaultWeight, ""
	default:
		return w, ""
	}
	InvalidWeights.Add(1)
	return DefaultWeight, problem + "; using " + strconv.FormatFloat(DefaultWeight, 'g', -1, 64)
}

// ParseFactor reads the weight factor parameter (urlparam.WeightFactorKey)
// that the Nacos discovery sets: absent or empty, 1; a finite number ≥ 0,
// used as is (0 drains the provider, fractions are kept); anything else,
// 1 with the reason in problem, so a bad value never starves a provider.
func ParseFactor(raw string) (factor float64, problem string) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return 1, ""
	}
	f, err := strconv.ParseFloat(raw, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
		InvalidWeights.Add(1)
		return 1, "weight factor " + strconv.Quote(raw) + " is invalid; using 1"
	}
	return f, ""
}

func isRangeError(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

// parseAge reads a provider's start timestamp and warmup period, detecting
// seconds or milliseconds. A timestamp after now is replaced by now.
func parseAge(timestamp, warmup string, now time.Time) (start time.Time, period time.Duration, problem string) {
	period = defaultPeriod
	ts, err := strconv.ParseInt(strings.TrimSpace(timestamp), 10, 64)
	if err != nil || ts <= 0 {
		if timestamp != "" {
			problem = "timestamp " + strconv.Quote(timestamp) + " is not a positive integer; provider treated as warm"
		}
		return time.Time{}, 0, problem
	}
	unit := time.Second
	if ts > millisThreshold {
		unit = time.Millisecond
		start = time.UnixMilli(ts)
	} else {
		start = time.Unix(ts, 0)
	}
	if warmup = strings.TrimSpace(warmup); warmup != "" {
		p, err := strconv.ParseFloat(warmup, 64)
		switch {
		case err != nil || math.IsNaN(p) || p < 0:
			problem = "warmup " + strconv.Quote(warmup) + " is invalid; using " + defaultPeriod.String()
		case p*float64(unit) > float64(365*24*time.Hour):
			period = 365 * 24 * time.Hour
			problem = "warmup " + strconv.Quote(warmup) + " is longer than a year; capped"
		default:
			period = time.Duration(p * float64(unit))
		}
	}
	if start.After(now) {
		start = now
		problem = strings.TrimPrefix(problem+"; timestamp is in the future (clock skew); warming up from now", "; ")
	}
	return start, period, problem
}

// fraction returns the share of its full weight that a provider which has
// been up for uptime gets, in [0, 1]. It is 1 once uptime reaches period.
func (o Options) fraction(uptime, period time.Duration) float64 {
	if period <= 0 || uptime >= period {
		return 1
	}
	f := max(float64(uptime), 0) / float64(period)
	if a := o.Aggression; a > 0 && a != 1 && !math.IsInf(a, 0) {
		f = math.Pow(f, 1/a)
	}
	minFrac := o.MinPercent / 100
	if !(minFrac > 0) { // also catches NaN
		minFrac = 0
	}
	return max(f, min(minFrac, 1))
}

// Weight returns the weight of the provider described by m at now.
func (o Options) Weight(m Meta, now time.Time) float64 {
	if m.Weight <= 0 || m.Start.IsZero() {
		return max(m.Weight, 0)
	}
	w := m.Weight * o.fraction(now.Sub(m.Start), m.Period)
	// Dubbo's floor: a warming provider keeps at least one weight unit.
	return max(w, min(1, m.Weight))
}

// WarmAt returns when the provider described by m reaches full weight, or
// the zero Time if it never warms up (it is warm already).
func (m Meta) WarmAt() time.Time {
	if m.Start.IsZero() || m.Period <= 0 || m.Weight <= 0 {
		return time.Time{}
	}
	return m.Start.Add(m.Period)
}
