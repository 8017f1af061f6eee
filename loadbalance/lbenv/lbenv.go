// Package lbenv is the environment every balancer of the module reads: its
// two clocks and its random source. The zero Env is the real one; tests
// and simulators inject their own, the same Env for every balancer and
// filter that share statistics.
package lbenv

import (
	"math/rand/v2"
	"time"

	"github.com/dubbogo-lb/lb/rpcstatus"
)

// Env is what a balancer reads of the world besides its providers. Each
// field is optional.
type Env struct {
	// Now is the monotonic clock, in nanoseconds, of the call statistics:
	// it must be the clock the lbactive filter stamps calls with
	// (filter.Options.Now). Default rpcstatus.Nanotime, the filter's
	// default.
	Now func() int64
	// Wall is the wall clock that providers' uptimes are measured with
	// (package warmup: their start timestamp is a wall time). Default
	// time.Now.
	Wall func() time.Time
	// Rand returns uniformly random words, safe for concurrent use.
	// Default math/rand/v2's Uint64.
	Rand func() uint64
}

// WithDefaults returns e with its unset fields set to their defaults.
func (e Env) WithDefaults() Env {
	if e.Now == nil {
		e.Now = rpcstatus.Nanotime
	}
	if e.Wall == nil {
		e.Wall = time.Now
	}
	if e.Rand == nil {
		e.Rand = rand.Uint64
	}
	return e
}
