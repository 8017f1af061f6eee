package outlier

import (
	"strconv"
	"strings"
	"time"

	"dubbo.apache.org/dubbo-go/v3/common"

	"github.com/dubbogo-lb/lb/internal/statuscode"
	"github.com/dubbogo-lb/lb/internal/urlparam"
)

// URL parameters of outlier ejection, read with urlparam.MethodParam
// (method level first, in both spellings) from the consumer's own URL
// (consumer-only: urlparam.Whose): per reference in the consumer's YAML
// params, or per method.
const (
	// RulesKey lists the rules that eject: consecutive-failures,
	// failure-percentage, success-rate, or none to turn ejection off.
	RulesKey = "outlier.rules"
	// ErrorsKey lists the status codes whose failures count, beside
	// errors without a status and timeouts and unavailable, which always
	// count: triple code names (internal, unknown, biz_error…) or numbers;
	// all counts every failure, none only those that always count.
	ErrorsKey = "outlier.errors"
	// ConsecutiveKey is the run of failures that ejects.
	ConsecutiveKey = "outlier.consecutive-failures"
	// IntervalKey is the interval of the failure-percentage and
	// success-rate rules.
	IntervalKey = "outlier.interval"
	// BaseEjectionKey is the ejection time, times the number of
	// ejections in a row.
	BaseEjectionKey = "outlier.base-ejection-time"
	// MaxEjectionKey caps the ejection time.
	MaxEjectionKey = "outlier.max-ejection-time"
	// MaxEjectedKey is the largest share of providers ejected at
	// once, in percent.
	MaxEjectedKey = "outlier.max-ejection-percent"
	// PanicKey is the share of usable providers, in percent, below
	// which ejection is ignored.
	PanicKey = "outlier.panic-threshold"

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

// Config configures outlier ejection for one (service, method): which
// rules eject, how long, how many providers at most, and which failures
// count. DefaultConfig holds the defaults, those of Envoy and gRPC (gRFC
// A50) with the consecutive-failures rule on.
type Config struct {
	// ConsecutiveFailures ejects a provider after this many failures in a
	// row; 0 turns the rule off. Default 5.
	ConsecutiveFailures int64
	// FailurePercentage is the failure-percentage rule; off by default.
	FailurePercentage FailurePercentage
	// SuccessRate is the success-rate rule; off by default.
	SuccessRate SuccessRate
	// Interval is how often the failure-percentage and success-rate rules
	// look at the calls of the interval past, and the period after which
	// a provider's count of ejections in a row goes down by one. Default
	// 10 s.
	Interval time.Duration
	// BaseEjectionTime is how long an ejection lasts, times the number of
	// ejections in a row. Default 30 s.
	BaseEjectionTime time.Duration
	// MaxEjectionTime caps an ejection (at least BaseEjectionTime).
	// Default 300 s.
	MaxEjectionTime time.Duration
	// MaxEjectionPercent is the largest share of the providers, in
	// percent, ejected at once; one provider may always be. Default 10.
	MaxEjectionPercent float64
	// PanicThreshold, in percent: when fewer providers than that share
	// would be usable, ejection is ignored and every provider serves.
	// Default 50.
	PanicThreshold float64
	// Counted says which failures count: bit c for status code c, bit 0
	// for failures without a status code. Default statuscode.DefaultCounted; it
	// always includes statuscode.AlwaysCounted.
	Counted uint32
}

// FailurePercentage ejects the providers whose calls failed at least
// Threshold percent of the time over the last interval, when at least
// MinimumHosts providers had RequestVolume calls or more in it.
type FailurePercentage struct {
	Enabled bool
	// Threshold in percent; default 85.
	Threshold float64
	// MinimumHosts default 5; RequestVolume default 50.
	MinimumHosts  int64
	RequestVolume int64
}

// SuccessRate ejects the providers whose success rate over the last
// interval is more than StdevFactor standard deviations below the mean of
// the providers, when at least MinimumHosts providers had RequestVolume
// calls or more in it.
type SuccessRate struct {
	Enabled bool
	// StdevFactor default 1.9.
	StdevFactor float64
	// MinimumHosts default 5; RequestVolume default 100.
	MinimumHosts  int64
	RequestVolume int64
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

// ReadConfig returns the outlier configuration of method that the
// provider URL u carries from its consumer, and a description of each value it replaced by its default. It
// builds strings: call it when a snapshot is built.
func ReadConfig(u *common.URL, method string) (Config, []string) {
	return ParseConfig(func(key string) string { return urlparam.MethodParam(u, method, key) })
}

// maxCount bounds counts (runs of failures, hosts, calls).
const maxCount = 1 << 40

// ParseConfig reads an outlier configuration from param, which returns
// the value of a key ("" when unset). A value that is malformed or out of
// range is replaced by its default, and problems says so, one entry per
// value. It never panics.
func ParseConfig(param func(key string) string) (o Config, problems []string) {
	o = DefaultConfig
	p := configParser{param: param}
	consecutive, failurePct, successRate := p.rules()
	p.count(ConsecutiveKey, &o.ConsecutiveFailures)
	if !consecutive {
		o.ConsecutiveFailures = 0
	}
	o.FailurePercentage.Enabled, o.SuccessRate.Enabled = failurePct, successRate
	p.duration(IntervalKey, &o.Interval)
	p.duration(BaseEjectionKey, &o.BaseEjectionTime)
	p.duration(MaxEjectionKey, &o.MaxEjectionTime)
	p.percent(MaxEjectedKey, &o.MaxEjectionPercent)
	p.percent(PanicKey, &o.PanicThreshold)
	p.percent(FailurePercentThresholdKey, &o.FailurePercentage.Threshold)
	p.count(FailurePercentMinimumHostsKey, &o.FailurePercentage.MinimumHosts)
	p.count(FailurePercentRequestVolumeKey, &o.FailurePercentage.RequestVolume)
	p.factor(SuccessRateStdevFactorKey, &o.SuccessRate.StdevFactor)
	p.count(SuccessRateMinimumHostsKey, &o.SuccessRate.MinimumHosts)
	p.count(SuccessRateRequestVolumeKey, &o.SuccessRate.RequestVolume)
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

// count reads a whole number in [1, maxCount].
func (p *configParser) count(key string, dst *int64) {
	v, ok := p.value(key)
	if !ok {
		return
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 1 && n <= maxCount {
		*dst = n
		return
	}
	p.replaced(key, v, "is not a whole number from 1 to "+strconv.Itoa(maxCount), strconv.FormatInt(*dst, 10))
}

// duration reads a positive duration ("30s", or milliseconds as Dubbo
// Java writes them), at most a year.
func (p *configParser) duration(key string, dst *time.Duration) {
	v, ok := p.value(key)
	if !ok {
		return
	}
	if d, ok := urlparam.ParseDuration(v); ok {
		*dst = d
		return
	}
	p.replaced(key, v, "is not a positive duration (30s, or milliseconds) of at most a year", dst.String())
}

// percent reads a number in [0, 100], with or without "%".
func (p *configParser) percent(key string, dst *float64) {
	v, ok := p.value(key)
	if !ok {
		return
	}
	if f, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(v, "%")), 64); err == nil && f >= 0 && f <= 100 {
		*dst = f
		return
	}
	p.replaced(key, v, "is not a percentage from 0 to 100", strconv.FormatFloat(*dst, 'g', -1, 64))
}

// factor reads a positive number of at most 1000.
func (p *configParser) factor(key string, dst *float64) {
	v, ok := p.value(key)
	if !ok {
		return
	}
	if f, err := strconv.ParseFloat(v, 64); err == nil && f > 0 && f <= 1000 {
		*dst = f
		return
	}
	p.replaced(key, v, "is not a positive number of at most 1000", strconv.FormatFloat(*dst, 'g', -1, 64))
}

// rules reads RulesKey; by default only consecutive failures eject.
func (p *configParser) rules() (consecutive, failurePct, successRate bool) {
	v, ok := p.value(RulesKey)
	if !ok {
		return true, false, false
	}
	none, known := false, false
	var unknown []string
	for field := range strings.SplitSeq(v, ",") {
		switch f := strings.ToLower(strings.TrimSpace(field)); f {
		case "":
		case "none":
			none = true
		case ruleConsecutiveFailures:
			consecutive, known = true, true
		case ruleFailurePercentage:
			failurePct, known = true, true
		case ruleSuccessRate:
			successRate, known = true, true
		default:
			unknown = append(unknown, strconv.Quote(f))
		}
	}
	switch {
	case none && (known || len(unknown) > 0):
		p.replaced(RulesKey, v, "mixes none with rules", "none (ejection off)")
		return false, false, false
	case none:
		return false, false, false
	case len(unknown) > 0 && known:
		p.problems = append(p.problems, RulesKey+" "+strconv.Quote(v)+": skipped unknown rule "+strings.Join(unknown, ", ")+
			" (known: "+ruleConsecutiveFailures+", "+ruleFailurePercentage+", "+ruleSuccessRate+", none)")
	case !known:
		p.replaced(RulesKey, v, "names no rule (known: "+ruleConsecutiveFailures+", "+ruleFailurePercentage+", "+ruleSuccessRate+", none)", ruleConsecutiveFailures)
		return true, false, false
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
