package greeter

import (
	"testing"
	"time"
)

// FuzzParseWhen checks the times of the provider's -fail-at and
// -recover-at: never before the start when given as a duration, an error
// or the zero time for anything else unusable, never a panic.
func FuzzParseWhen(f *testing.F) {
	for _, s := range []string{"", "30s", "-1s", "1h30m", "2026-12-01T10:00:00Z", "2026-12-01T10:00:00.123+02:00", "tomorrow", "9999999h"} {
		f.Add(s)
	}
	start := time.Unix(1_700_000_000, 0)
	f.Fuzz(func(t *testing.T, raw string) {
		at, err := ParseWhen(raw, start)
		if err != nil && !at.IsZero() {
			t.Fatalf("ParseWhen(%q) = %v with error %v", raw, at, err)
		}
		if _, derr := time.ParseDuration(raw); derr == nil && err == nil && at.Before(start) {
			t.Fatalf("ParseWhen(%q) = %v, before the start", raw, at)
		}
	})
}

// FuzzParseCode checks the provider's -fail-code: a code from 1 to 31 or
// an error, never a panic.
func FuzzParseCode(f *testing.F) {
	for _, s := range []string{"unavailable", "internal", "biz_error", "code_17", "2", "0", "99", "", "UNAVAILABLE"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		c, err := ParseCode(raw)
		if err == nil && (c < 1 || c > 31) {
			t.Fatalf("ParseCode(%q) = %d", raw, c)
		}
	})
}
