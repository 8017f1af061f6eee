package skeleton

import (
	"time"

	"github.com/dubbogo-lb/lb/loadbalance/internal/member"
	"github.com/dubbogo-lb/lb/rpcstatus"
)

// FailureWindow is how long a provider's latest failure weighs by default
// (fewestactive's Options.FailureWindow): until then each failure of its
// current run counts as one more call in flight.
const FailureWindow = 10 * time.Second

// FailurePairs is how many pairs a power-of-two-choices pick draws at most
// while each winner is in a run of recent failures (TwoChoices.Window).
const FailurePairs = 4

// Failures says how a pick charges failures: a provider whose latest
// failure (one that counts for outlier ejection, whether ejection is on or
// not) ended less than Window ns before Now counts each failure of its
// current run as one more call in flight (rpcstatus.Stats.Penalty), so that
// a call that fails fast weighs as if it still ran. The zero value charges
// nothing.
type Failures struct{ Now, Window int64 }

// RecentFailures returns how a pick among s charges failures with window
// ns: not at all, without reading the clock, unless a failure counted on
// one of s's providers less than window ago. window 0 charges nothing.
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

// Penalty returns the failures f charges st: those of its current run if
// the latest ended less than the window ago, else 0.
func (f Failures) Penalty(st *rpcstatus.Stats) int64 {
	if f.Now == 0 {
		return 0
	}
	return st.Penalty(f.Now, f.Window)
}

// Load returns st's calls in flight plus the failures f charges it.
func (f Failures) Load(st *rpcstatus.Stats) int64 { return st.Active() + f.Penalty(st) }
