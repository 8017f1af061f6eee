// Package builds lets the module's tests and simulator decide where a
// balancer of the module builds its snapshots, and wait for those under
// way, without that knob being part of the balancer's public API.
//
// A balancer embeds a Hook under an unexported name; Of finds it through
// an interface whose method only a Hook has.
package builds

// Control is what a balancer's snapshot builds offer the module's tests.
type Control interface {
	// SetInlineUpTo sets the largest list whose snapshot Select builds on
	// the call that sees it: math.MaxInt makes every build synchronous
	// and a run deterministic, 0 sends every build off the call's path.
	SetInlineUpTo(n int)
	// WaitBuilds waits until no snapshot is being built off a call's path.
	WaitBuilds()
}

// Hook, embedded in a balancer, makes Of return c.
type Hook struct{ c Control }

// NewHook returns the Hook of c.
func NewHook(c Control) Hook { return Hook{c} }

func (h Hook) control() Control { return h.c }

// Of returns the Control of lb, a balancer that embeds a Hook; ok is false
// for any other value.
func Of(lb any) (c Control, ok bool) {
	h, ok := lb.(interface{ control() Control })
	if !ok || h.control() == nil {
		return nil, false
	}
	return h.control(), true
}
