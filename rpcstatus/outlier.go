package rpcstatus

import (
	"sync/atomic"
	"time"
)

// NoCode is the status code of a failure that carries none: a transport
// error (connection refused or reset, a closed client), a local timeout,
// anything but a status from the provider. Status codes of the triple
// protocol (1 to 17) are the others (see Board.Counts).
const NoCode = 0

// maxCode is the largest status code a Board can tell apart; larger codes
// are judged as maxCode.
const maxCode = 31

// Board is where the lbactive filter and the outlier detection of one
// (service, method) meet. The detection links it to the statistics of each
// provider it watches (Stats.Link); from then on every call that ends
// through the filter (Stats.Judge) keeps the provider's run of consecutive
// failures and raises the board's alarm when the run reaches the threshold
// or when the time the detection asked to be woken at has come. The
// balancers compare the alarm with the value their snapshot saw, one atomic
// load per Select, and let the detection decide again when it moved.
//
// Times are those of the filter's clock (monotonic ns), so the detection
// works on the time of the calls and never reads a clock itself. The zero
// value counts no failure and raises no alarm until Configure.
type Board struct {
	alarm   atomic.Uint64
	alarmAt atomic.Int64 // the latest time the alarm was raised
	wakeAt  atomic.Int64 // 0: none
	// threshold is the run of failures that raises the alarm; 0: none.
	threshold atomic.Int64
	// counted has bit c set when failures with status code c count.
	counted atomic.Uint32
	// lastFailure is the latest time a failure counted on any provider.
	lastFailure atomic.Int64
}

// Configure sets the run of consecutive failures that raises the alarm (0:
// none) and which failures count: bit c of counted for status code c,
// bit NoCode for failures without one.
func (b *Board) Configure(threshold int64, counted uint32) {
	b.threshold.Store(max(threshold, 0))
	b.counted.Store(counted)
}

// Counts reports whether a failure with status code code counts.
func (b *Board) Counts(code int) bool {
	if code < 0 || code > maxCode {
		code = maxCode
	}
	return b.counted.Load()>>uint(code)&1 != 0
}

// raise raises the alarm at now (ns).
func (b *Board) raise(now int64) {
	for {
		at := b.alarmAt.Load()
		if now <= at || b.alarmAt.CompareAndSwap(at, now) {
			break
		}
	}
	b.alarm.Add(1)
}

// Alarm returns how often the alarm was raised and the latest time it was:
// the time the detection takes as now when it decides.
func (b *Board) Alarm() (count uint64, at int64) {
	count = b.alarm.Load() // before the time: at is at least that raise's
	return count, b.alarmAt.Load()
}

// Raised returns how often the alarm was raised.
func (b *Board) Raised() uint64 { return b.alarm.Load() }

// WakeAt asks for the alarm to be raised by the first call that ends at or
// after at (ns); 0 cancels.
func (b *Board) WakeAt(at int64) { b.wakeAt.Store(max(at, 0)) }

// LastFailure returns the latest time (ns, to stampStep) a failure counted
// on a provider linked to the board, or 0.
func (b *Board) LastFailure() int64 { return b.lastFailure.Load() }

// ForgetFailures clears LastFailure if it is still last, so that readers
// can skip their failure-aware path until the next failure.
func (b *Board) ForgetFailures(last int64) { b.lastFailure.CompareAndSwap(last, 0) }

// wake raises the alarm once when now has reached the time asked for.
func (b *Board) wake(now int64) {
	if at := b.wakeAt.Load(); at != 0 && now >= at && b.wakeAt.CompareAndSwap(at, 0) {
		b.raise(now)
	}
}

// stampStep is the resolution of the failure times the board and the
// statistics keep: a failure within it of the time kept writes nothing, so
// that a storm of failures does not make every call write the same word.
const stampStep = int64(time.Millisecond)

// failed notes a failure that counted at now.
func (b *Board) failed(now int64) {
	if last := b.lastFailure.Load(); last == 0 || now-last >= stampStep {
		b.lastFailure.Store(now)
	}
}

// outlierStats is what Stats keeps for outlier detection.
type outlierStats struct {
	// streak is the run of consecutive failures that count, ended by a
	// success.
	streak atomic.Int64
	// counted is the number of failures that counted, ever.
	counted atomic.Int64
	// lastFailure is when the latest of them ended (ns, to stampStep), 0
	// if none.
	lastFailure atomic.Int64
	board       atomic.Pointer[Board]
	// failedAtReturn is 1 + Failed() when the provider last came back
	// from an ejection; 0: never ejected.
	failedAtReturn atomic.Int64
	// ejections is the number of times outlier detection ejected the
	// provider for the method, returns the number of times it let it back.
	ejections atomic.Int64
	returns   atomic.Int64
}

// Link makes b the board of the provider's method: from then on Judge
// counts its failures as b says and raises b's alarm.
func (s *Stats) Link(b *Board) {
	if s.board.Load() != b {
		s.board.Store(b)
	}
}

// Judge records the outcome of a call that ended at now (ns) for outlier
// detection: a failure with status code code (NoCode when it has none)
// that the linked board counts extends the provider's run of failures, and
// raises the board's alarm when the run reaches the board's threshold; any
// other outcome (a success, an error the board does not count, such as a
// business error: the provider answered) ends the run, as a non-5xx
// response ends Envoy's. Either way a call at or after the time the board
// asked to be woken at raises the alarm. Without a board nothing counts.
// It takes no lock and allocates nothing; the lbactive filter calls it
// after End.
func (s *Stats) Judge(now int64, failed bool, code int) {
	b := s.board.Load()
	if b == nil {
		return
	}
	if failed && b.Counts(code) {
		s.counted.Add(1)
		if last := s.lastFailure.Load(); last == 0 || now-last >= stampStep {
			s.lastFailure.Store(now)
		}
		b.failed(now)
		if n := s.streak.Add(1); n == b.threshold.Load() {
			b.raise(now)
		}
	} else if s.streak.Load() != 0 {
		s.streak.Store(0)
	}
	b.wake(now)
}

// SuccessIsNews reports whether a success would change anything that Judge
// keeps: a run of failures to end, or a wake-up the board waits for. It
// inlines, so that a caller skips the call to Judge for the common
// success: three loads.
func (s *Stats) SuccessIsNews() bool {
	b := s.board.Load()
	return b != nil && s.streak.Load()|b.wakeAt.Load() != 0
}

// Streak returns the run of consecutive failures that counted, ended by
// the latest success.
func (s *Stats) Streak() int64 { return s.streak.Load() }

// EndStreak starts the run of failures afresh, as outlier detection does
// when it ejects a provider or lets it back.
func (s *Stats) EndStreak() { s.streak.Store(0) }

// Ejected records that outlier detection ejected the provider for the
// method: it counts the ejection and starts a fresh run of failures.
func (s *Stats) Ejected() {
	s.ejections.Add(1)
	s.streak.Store(0)
}

// Ejections returns how many times outlier detection ejected the provider
// for the method.
func (s *Stats) Ejections() int64 { return s.ejections.Load() }

// EjectedNow reports whether outlier detection ejected the provider for
// the method and has not let it back: what the discovery reads to grow a
// consumer's subset past ejected members. Two loads.
func (s *Stats) EjectedNow() bool { return s.ejections.Load() > s.returns.Load() }

// Returned records that outlier detection let the provider back from an
// ejection: it starts a fresh run of failures, and the failures so far
// were punished by the ejection (see CleanSinceReturn).
func (s *Stats) Returned() {
	s.returns.Add(1)
	s.streak.Store(0)
	s.failedAtReturn.Store(s.Failed() + 1)
}

// CleanSinceReturn reports whether the provider came back from an ejection
// and no call of its method has failed since: a balancer that remembers
// failures (rtadaptive's error charge) should then forget those the
// ejection punished.
func (s *Stats) CleanSinceReturn() bool {
	r := s.failedAtReturn.Load()
	return r != 0 && r == s.Failed()+1
}

// Counted returns the number of failures that counted, ever.
func (s *Stats) Counted() int64 { return s.counted.Load() }

// Penalty returns the run of failures if the latest of them ended less
// than window before now (ns), else 0: how many more calls in flight a
// balancer that compares calls in flight should charge the provider, so
// that a call that fails fast weighs as if it still ran.
func (s *Stats) Penalty(now, window int64) int64 {
	n := s.streak.Load()
	if n == 0 || now-s.lastFailure.Load() >= window {
		return 0
	}
	return n
}
