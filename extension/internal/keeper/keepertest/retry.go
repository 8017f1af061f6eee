package keepertest

import (
	"testing"
	"time"

	"github.com/dubbogo-lb/lb/extension/internal/nacosconf"
)

// RetryCase is a registration that Nacos fails Fail times in a row, with
// Params appended to the registry URL's query: it is tried Tries times in
// all, and succeeds if OK.
type RetryCase struct {
	Name, Params string
	Fail, Tries  int
	Wait         time.Duration // before the first retry
	OK           bool
}

// RetryCases are the cases of nacos.retry and nacos.retry-wait (package
// nacosconf) that every registration in Nacos passes, as Dubbo Java's
// Nacos registry does them: 10 retries and 10 ms by default, a bad value
// gets the default.
var RetryCases = []RetryCase{
	{"defaults", "", 3, 4, 10 * time.Millisecond, true},
	{"all ten retries fail", "", 11, 11, 10 * time.Millisecond, false},
	{"the tenth retry succeeds", "", 10, 11, 10 * time.Millisecond, true},
	{"set", "&nacos.retry=2&nacos.retry-wait=1500", 2, 3, 1500 * time.Millisecond, true},
	{"no retry", "&nacos.retry=0", 1, 1, 0, false},
	{"retries used up", "&nacos.retry=2", 5, 3, 10 * time.Millisecond, false},
	{"bad values get the defaults", "&nacos.retry=-1&nacos.retry-wait=soon", 1, 2, 10 * time.Millisecond, true},
	{"too many", "&nacos.retry=1000000", 1, 2, 10 * time.Millisecond, true},
}

// CheckWaits fails t unless waits are the waits before the case's retries:
// one fewer than its tries, Wait before the first, then as
// nacosconf.Retry.Before says.
func (c RetryCase) CheckWaits(t testing.TB, waits []time.Duration) {
	t.Helper()
	if len(waits) != c.Tries-1 {
		t.Errorf("%d waits; want %d", len(waits), c.Tries-1)
	}
	backoff := nacosconf.Retry{Wait: c.Wait}
	for i, w := range waits {
		if want := backoff.Before(i + 1); w != want {
			t.Errorf("waited %v before retry %d; want %v", w, i+1, want)
		}
	}
}
