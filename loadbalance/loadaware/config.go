package loadaware

import (
	"strconv"
	"strings"
	"time"

	"github.com/dubbogo-lb/lb/internal/urlparam"
	"github.com/dubbogo-lb/lb/loadbalance/internal/skeleton"
)

// URL parameters (reference params, method level first) that override
// the Options of the same names per (service, method): the cost
// ("capacity", "wrr" or "java"), durations ("10s", or milliseconds; "0"
// turns the blackout and the probe off) and the error penalty (0 to 100).
// A malformed or out-of-range value keeps the option's, with one WARN line.
const (
	costKey         = "loadaware.cost"
	blackoutKey     = "loadaware.blackout"
	expirationKey   = "loadaware.expiration"
	updateKey       = "loadaware.update-period"
	errorPenaltyKey = "loadaware.error-penalty"
	probeAfterKey   = "loadaware.probe-after"
)

// config is what one (service, method) runs with.
type config struct {
	cost                         Cost
	blackout, expiration, update int64 // ns
	probe                        int64 // ns; 0: no probe
	penalty                      float64
}

func (o *Options) config() config {
	return config{cost: o.Cost, blackout: int64(o.Blackout), expiration: int64(o.Expiration),
		update: int64(o.UpdatePeriod), probe: int64(o.ProbeAfter), penalty: o.ErrorPenalty}
}

// parseConfig applies the parameters that param returns (by key, "" when
// absent) over base and returns the result, with one message per value it
// could not use (kept at base's value).
func parseConfig(base Options, param func(key string) string) (Options, []string) {
	o := base
	var problems []string
	bad := func(key, v, why, kept string) { problems = append(problems, skeleton.Problem(key, v, why, kept)) }
	if v := strings.TrimSpace(param(costKey)); v != "" {
		switch c := Cost(strings.ToLower(v)); c {
		case CostCapacity, CostWRR, CostJava:
			o.Cost = c
		default:
			bad(costKey, v, "is not capacity, wrr or java", string(o.Cost))
		}
	}
	dur := func(key string, dst *time.Duration, zeroOK bool) {
		v := strings.TrimSpace(param(key))
		switch {
		case v == "":
		case zeroOK && (v == "0" || v == "0s"):
			*dst = 0
		default:
			if d, ok := urlparam.ParseDuration(v); ok {
				*dst = d
			} else {
				bad(key, v, "is not a positive duration (10s, or milliseconds) of at most a year", dst.String())
			}
		}
	}
	dur(blackoutKey, &o.Blackout, true)
	dur(expirationKey, &o.Expiration, false)
	dur(updateKey, &o.UpdatePeriod, false)
	dur(probeAfterKey, &o.ProbeAfter, true)
	if v := strings.TrimSpace(param(errorPenaltyKey)); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err == nil && f >= 0 && f <= 100 {
			o.ErrorPenalty = f
		} else {
			bad(errorPenaltyKey, v, "is not a number from 0 to 100", strconv.FormatFloat(o.ErrorPenalty, 'g', -1, 64))
		}
	}
	return o, problems
}
