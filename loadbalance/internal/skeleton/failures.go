package skeleton

import (
	"time"

	"github.com/dubbogo-lb/lb/loadbalance/internal/member"
	"github.com/dubbogo-lb/lb/rpcstatus"
)

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
