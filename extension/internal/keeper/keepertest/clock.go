// Package keepertest holds what tests of registration share: a clock for
// the registration keeper, and the cases of a registration that Nacos
// fails.
package keepertest

import "time"

// Clock is a keeper clock that a test drives: every After first hands its
// wait to the test on Waits, and its channel fires when the test sends on
// Fire. Both channels are unbuffered, so the test knows where the keeper
// is: a receive on Waits means the check before it is done.
type Clock struct {
	Waits chan time.Duration
	Fire  chan time.Time
}

// NewClock returns a Clock with its channels made.
func NewClock() *Clock {
	return &Clock{Waits: make(chan time.Duration), Fire: make(chan time.Time)}
}

// After reports d on Waits and returns Fire.
func (c *Clock) After(d time.Duration) <-chan time.Time {
	c.Waits <- d
	return c.Fire
}
