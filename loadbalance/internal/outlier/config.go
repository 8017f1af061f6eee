package outlier

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"dubbo.apache.org/dubbo-go/v3/common"

	"github.com/dubbogo-lb/lb/internal/statuscode"
	"github.com/dubbogo-lb/lb/internal/urlparam"
)

// URL parameters of outlier ejection (Config), consumer-only, read at
// reference or method level (urlparam.MethodParam).
const (
	RulesKey        = "outlier.rules"  // consecutive-failures, failure-percentage, success-rate, or none
	ErrorsKey       = "outlier.errors" // Config.Counted: code names or numbers, all or none
	ConsecutiveKey  = "outlier.consecutive-failures"
	IntervalKey     = "outlier.interval"
	BaseEjectionKey = "outlier.base-ejection-time"
	MaxEjectionKey  = "outlier.max-ejection-time"
	MaxEjectedKey   = "outlier.max-ejection-percent"
	PanicKey        = "outlier.panic-threshold"

	FailurePercentThresholdKey     = "outlier.failure-percentage.threshold"
	FailurePercentMinimumHostsKey  = "outlier.failure-percentage.minimum-hosts"
	FailurePercentRequestVolumeKey = "outlier.failure-percentage.request-volume"
	SuccessRateStdevFactorKey      = "outlier.success-rate.stdev-factor"
	SuccessRateMinimumHostsKey     = "outlier.success-rate.minimum-hosts"
	SuccessRateRequestVolumeKey    = "outlier.success-rate.request-volume"
)

// Names of the rules in RulesKey.
const (
	ruleConsecutiveFailures = "consecutive-failures"
	ruleFailurePercentage   = "failure-percentage"
	ruleSuccessRate         = "success-rate"
)

// codeNames are the status codes by name, as triple_protocol.Code.String
// writes them (biz_error is ours: dubbo-go writes code_17).
var codeNames = map[string]int{
	"canceled": 1, "unknown": statuscode.Unknown, "invalid_argument": 3, "deadline_exceeded": statuscode.DeadlineExceeded,
	"not_found": 5, "already_exists": 6, "permission_denied": 7, "resource_exhausted": 8,
	"failed_precondition": 9, "aborted": 10, "out_of_range": 11, "unimplemented": statuscode.Unimplemented,
	"internal": statuscode.Internal, "unavailable": statuscode.Unavailable, "data_loss": statuscode.DataLoss,
	"unauthenticated": 16, "biz_error": statuscode.BizError,
}

// Config configures outlier ejection for one (service, method).
// DefaultConfig holds the defaults, Envoy's and gRPC's (gRFC A50) with the
// consecutive-failures rule on.
type Config struct {
	ConsecutiveFailures int64 // ejects after this many failures in a row; 0: off
	FailurePercentage   FailurePercentage
	SuccessRate         SuccessRate
	// Interval is the period of the interval rules, and after which a count
	// of ejections in a row goes down by one.
	Interval time.Duration
	// BaseEjectionTime × ejections in a row is an ejection's length, at
	// most max(BaseEjectionTime, MaxEjectionTime).
	BaseEjectionTime, MaxEjectionTime time.Duration
	MaxEjectionPercent                float64 // caps the providers ejected at once (one always may be)
	PanicThreshold                    float64 // percent: with fewer usable, ejection is ignored
	// Counted says which failures count: bit c for status code c, bit 0 for
	// failures without one; it always includes statuscode.AlwaysCounted.
	Counted uint32
}

// FailurePercentage ejects the providers whose calls failed at least
// Threshold percent of the time over the last interval, when at least
// MinimumHosts providers had RequestVolume calls or more in it.
type FailurePercentage struct {
	Enabled                     bool
	Threshold                   float64
	MinimumHosts, RequestVolume int64
}

// SuccessRate ejects the providers whose success rate over the last
// interval is more than StdevFactor standard deviations below the mean,
// when at least MinimumHosts providers had RequestVolume calls or more.
type SuccessRate struct {
	Enabled                     bool
	StdevFactor                 float64
	MinimumHosts, RequestVolume int64
}

// DefaultConfig is the configuration when no parameter is set.
var DefaultConfig = Config{
	ConsecutiveFailures: 5,
	FailurePercentage:   FailurePercentage{Threshold: 85, MinimumHosts: 5, RequestVolume: 50},
	SuccessRate:         SuccessRate{StdevFactor: 1.9, MinimumHosts: 5, RequestVolume: 100},
	Interval:            10 * time.Second,
	BaseEjectionTime:    30 * time.Second,
	MaxEjectionTime:     300 * time.Second,
	MaxEjectionPercent:  10,
	PanicThreshold:      50,
	Counted:             statuscode.DefaultCounted,
}

// Enabled reports whether any rule ejects.
func (o *Config) Enabled() bool {
	return o.ConsecutiveFailures > 0 || o.FailurePercentage.Enabled || o.SuccessRate.Enabled
}

// Periodic reports whether a rule looks at intervals.
func (o *Config) Periodic() bool { return o.FailurePercentage.Enabled || o.SuccessRate.Enabled }

// ReadConfig returns the outlier configuration of method that the provider
// URL u carries from its consumer, and its problems (ParseConfig).
func ReadConfig(u *common.URL, method string) (Config, []string) {
	return ParseConfig(func(key string) string { return urlparam.MethodParam(u, method, key) })
}

// maxCount bounds counts (runs of failures, hosts, calls).
const maxCount = 1 << 40

// ParseConfig reads an outlier configuration from param (a key's value,
// "" when unset). A malformed or out-of-range value keeps its default and
// adds one entry to problems. It never panics.
func ParseConfig(param func(key string) string) (o Config, problems []string) {
	o = DefaultConfig
	p := configParser{param: param}
	consecutive, failurePct, successRate := p.rules()
	notCount := "is not a whole number from 1 to " + strconv.Itoa(maxCount)
	const notPercent = "is not a percentage from 0 to 100"
	const notDuration = "is not a positive duration (30s, or milliseconds) of at most a year"
	set(&p, ConsecutiveKey, &o.ConsecutiveFailures, count, notCount)
	if !consecutive {
		o.ConsecutiveFailures = 0
	}
	o.FailurePercentage.Enabled, o.SuccessRate.Enabled = failurePct, successRate
	set(&p, IntervalKey, &o.Interval, urlparam.ParseDuration, notDuration)
	set(&p, BaseEjectionKey, &o.BaseEjectionTime, urlparam.ParseDuration, notDuration)
	set(&p, MaxEjectionKey, &o.MaxEjectionTime, urlparam.ParseDuration, notDuration)
	set(&p, MaxEjectedKey, &o.MaxEjectionPercent, percent, notPercent)
	set(&p, PanicKey, &o.PanicThreshold, percent, notPercent)
	set(&p, FailurePercentThresholdKey, &o.FailurePercentage.Threshold, percent, notPercent)
	set(&p, FailurePercentMinimumHostsKey, &o.FailurePercentage.MinimumHosts, count, notCount)
	set(&p, FailurePercentRequestVolumeKey, &o.FailurePercentage.RequestVolume, count, notCount)
	set(&p, SuccessRateStdevFactorKey, &o.SuccessRate.StdevFactor, factor, "is not a positive number of at most 1000")
	set(&p, SuccessRateMinimumHostsKey, &o.SuccessRate.MinimumHosts, count, notCount)
	set(&p, SuccessRateRequestVolumeKey, &o.SuccessRate.RequestVolume, count, notCount)
	o.Counted = p.codes()
	return o, p.problems
}

type configParser struct {
	param    func(string) string
	problems []string
}

// value returns the trimmed value of key, and whether it is set.
func (p *configParser) value(key string) (string, bool) {
	v := strings.TrimSpace(p.param(key))
	return v, v != ""
}

func (p *configParser) replaced(key, raw, why, def string) {
	p.problems = append(p.problems, key+" "+strconv.Quote(raw)+" "+why+"; using "+def)
}

// set stores in dst the value of key that parse accepts; a value it
// refuses keeps dst, and problems says why.
func set[T any](p *configParser, key string, dst *T, parse func(string) (T, bool), why string) {
	v, ok := p.value(key)
	if !ok {
		return
	}
	if x, ok := parse(v); ok {
		*dst = x
		return
	}
	p.replaced(key, v, why, fmt.Sprint(*dst))
}

// count reads a whole number in [1, maxCount].
func count(v string) (int64, bool) {
	n, err := strconv.ParseInt(v, 10, 64)
	return n, err == nil && n >= 1 && n <= maxCount
}

// percent reads a number in [0, 100], with or without "%".
func percent(v string) (float64, bool) {
	f, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(v, "%")), 64)
	return f, err == nil && f >= 0 && f <= 100
}

// factor reads a positive number of at most 1000.
func factor(v string) (float64, bool) {
	f, err := strconv.ParseFloat(v, 64)
	return f, err == nil && f > 0 && f <= 1000
}

// rules reads RulesKey; by default only consecutive failures eject.
func (p *configParser) rules() (consecutive, failurePct, successRate bool) {
	v, ok := p.value(RulesKey)
	if !ok {
		return true, false, false
	}
	const known = " (known: " + ruleConsecutiveFailures + ", " + ruleFailurePercentage + ", " + ruleSuccessRate + ", none)"
	none, some := false, false
	var unknown []string
	for field := range strings.SplitSeq(v, ",") {
		switch f := strings.ToLower(strings.TrimSpace(field)); f {
		case "":
		case "none":
			none = true
		case ruleConsecutiveFailures:
			consecutive, some = true, true
		case ruleFailurePercentage:
			failurePct, some = true, true
		case ruleSuccessRate:
			successRate, some = true, true
		default:
			unknown = append(unknown, strconv.Quote(f))
		}
	}
	switch {
	case none:
		if some || len(unknown) > 0 {
			p.replaced(RulesKey, v, "mixes none with rules", "none (ejection off)")
		}
		return false, false, false
	case !some:
		p.replaced(RulesKey, v, "names no rule"+known, ruleConsecutiveFailures)
		return true, false, false
	case len(unknown) > 0:
		p.problems = append(p.problems, RulesKey+" "+strconv.Quote(v)+": skipped unknown rule "+strings.Join(unknown, ", ")+known)
	}
	return consecutive, failurePct, successRate
}

// codes reads ErrorsKey.
func (p *configParser) codes() uint32 {
	v, ok := p.value(ErrorsKey)
	if !ok {
		return statuscode.DefaultCounted
	}
	mask := statuscode.AlwaysCounted
	var unknown []string
	for field := range strings.SplitSeq(v, ",") {
		f := strings.ToLower(strings.ReplaceAll(strings.TrimSpace(field), "-", "_"))
		if c, ok := codeNames[f]; ok {
			mask |= 1 << c
			continue
		}
		switch n, err := strconv.Atoi(f); {
		case f == "" || f == "none":
		case f == "all":
			mask = statuscode.AllCounted
		case err == nil && n >= 1 && n <= 31:
			mask |= 1 << n
		default:
			unknown = append(unknown, strconv.Quote(f))
		}
	}
	if len(unknown) > 0 {
		p.problems = append(p.problems, ErrorsKey+" "+strconv.Quote(v)+": skipped "+strings.Join(unknown, ", ")+
			" (not a status code name such as internal, unknown, biz_error, nor a number from 1 to 31)")
	}
	return mask
}
