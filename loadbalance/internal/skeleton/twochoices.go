package skeleton

import (
	"time"

	"dubbo.apache.org/dubbo-go/v3/protocol/base"

	"github.com/dubbogo-lb/lb/loadbalance/internal/algo"
	"github.com/dubbogo-lb/lb/loadbalance/internal/member"
	"github.com/dubbogo-lb/lb/rpcstatus"
)

// TwoChoices is the power-of-two-choices pick: the better of two
// candidates, two distinct slots when the warm weights are equal, else two
// draws by warm weight. It allocates nothing.
type TwoChoices[T any] struct {
	Rand   algo.Rand
	Alias  func(v *member.View[T]) *algo.Alias    // v's warm weights' table, nil when equal (required)
	Better func(v *member.View[T], i, j int) bool // slot i is better than slot j (required)
	// Window, when > 0, is a failure window (ns, Failures): a winner in a
	// run of failures within it gives way to the winner of another pair,
	// up to FailurePairs pairs. Now (ns) is then required.
	Window int64
	Now    func() int64
}

// Pick returns the slot of v that the rule picks (a Spec.Pick).
func (c *TwoChoices[T]) Pick(v *member.View[T], _ base.Invocation) int {
	k := c.draw(v)
	if c.Window > 0 {
		f := RecentFailures(v.Set, c.Window, c.Now)
		for n := 1; n < FailurePairs && f.Penalty(v.Stat(k)) > 0; n++ {
			k = c.draw(v)
		}
	}
	return k
}

// draw returns the better of two candidates of v.
func (c *TwoChoices[T]) draw(v *member.View[T]) int {
	var i, j int
	if a := c.Alias(v); a != nil {
		i, j = a.Pick(c.Rand.Uint64()), a.Pick(c.Rand.Uint64())
	} else {
		i, j = algo.Pair(c.Rand.Uint64(), v.Len())
	}
	if i == j || c.Better(v, i, j) {
		return i
	}
	return j
}

// Among applies the rule to list, a subset of v (Spec.Among): two
// candidates drawn by warm weight; a list of two with usable weights
// (Interim's pair) is compared as it is.
func (c *TwoChoices[T]) Among(v *member.View[T], list []base.Invoker, _ base.Invocation) base.Invoker {
	a, b := list[0], list[len(list)-1]
	i, okA := v.Index(a)
	j, okB := v.Index(b)
	if len(list) != 2 || !okA || !okB || !algo.Usable(v.Weight(i)) || !algo.Usable(v.Weight(j)) {
		if v.Uniform {
			k, l := algo.Pair(c.Rand.Uint64(), len(list))
			a, b = list[k], list[l]
		} else {
			a, b = v.PickAmong(list, c.Rand.Uint64()), v.PickAmong(list, c.Rand.Uint64())
		}
		i, okA = v.Index(a)
		j, okB = v.Index(b)
	}
	if a == b || !okA || !okB || c.Better(v, i, j) {
		return a
	}
	return b
}

// FailureWindow is the default window of Failures.
const FailureWindow = 10 * time.Second

// FailurePairs is how many pairs a power-of-two-choices pick draws at most
// while each winner is in a run of recent failures (TwoChoices.Window).
const FailurePairs = 4

// Failures says how a pick charges failures: a provider whose latest
// counted failure ended less than Window ns before Now counts each failure
// of its current run as one more call in flight (rpcstatus.Stats.Penalty).
// The zero value charges nothing.
type Failures struct{ Now, Window int64 }

// RecentFailures returns how a pick among s charges failures with window
// ns; it reads the clock only if a failure of s's providers is that recent.
func RecentFailures(s *member.Set, window int64, now func() int64) Failures {
	board := s.Board()
	last := board.LastFailure()
	if last == 0 || window <= 0 {
		return Failures{}
	}
	t := now()
	if t-last >= window {
		board.ForgetFailures(last)
		return Failures{}
	}
	return Failures{Now: t, Window: window}
}

// Penalty returns the failures f charges st.
func (f Failures) Penalty(st *rpcstatus.Stats) int64 {
	if f.Now == 0 {
		return 0
	}
	return st.Penalty(f.Now, f.Window)
}

// Load returns st's calls in flight plus the failures f charges it.
func (f Failures) Load(st *rpcstatus.Stats) int64 { return st.Active() + f.Penalty(st) }
