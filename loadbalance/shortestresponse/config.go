package shortestresponse

import (
	"time"

	"github.com/dubbogo-lb/lb/internal/urlparam"
	"github.com/dubbogo-lb/lb/loadbalance/internal/skeleton"
)

// slidePeriodKey is the URL parameter (reference params, method level
// first) of the slide window's length: a duration ("30s") or Java's
// milliseconds ("30000"). Java reads dubbo.shortestresponse.slidePeriod
// from its application's environment.
const slidePeriodKey = "shortestresponse.slidePeriod"

// config is what one (service, method) runs with.
type config struct {
	period time.Duration // the slide window's length
}

// parseConfig reads the parameters that param returns (by key, "" when
// absent) over opts, with one problem per value it could not use.
func parseConfig(opts Options, param func(key string) string) (config, []string) {
	c := config{period: opts.SlidePeriod}
	var problems []string
	if raw := param(slidePeriodKey); raw != "" {
		if d, ok := urlparam.ParseDuration(raw); ok {
			c.period = d
		} else {
			problems = append(problems, skeleton.Problem(slidePeriodKey, raw, "is not a duration (30s, or Java's milliseconds)", c.period.String()))
		}
	}
	return c, problems
}
