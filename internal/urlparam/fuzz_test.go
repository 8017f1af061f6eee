package urlparam

import (
	"strconv"
	"strings"
	"testing"
)

// FuzzParseTimeout checks method timeouts: a valid one is positive and at
// most maxTimeout; anything else is refused, never a panic.
func FuzzParseTimeout(f *testing.F) {
	for _, s := range []string{"", "3s", "500ms", "3000", " 10 ", "-1s", "0", "1e3", "9999999999999999", "1h1m", "abc", "2562047h"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		d, ok := parseTimeout(raw)
		if ok != (d > 0) {
			t.Fatalf("parseTimeout(%q) = %v, %v", raw, d, ok)
		}
		if d > maxTimeout {
			t.Fatalf("parseTimeout(%q) = %v, above the %v cap", raw, d, maxTimeout)
		}
		if !ok && d != 0 {
			t.Fatalf("parseTimeout(%q) refused the value but returned %v", raw, d)
		}
	})
}

// FuzzParseActives checks the actives parameter: a limit only from a
// positive integer, no limit (0) from anything else, never a panic.
func FuzzParseActives(f *testing.F) {
	for _, s := range []string{"", "1", " 8 ", "0", "-3", "abc", "1.5", "9223372036854775807", "9223372036854775808", "+2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		n := ParseActives(raw)
		if n < 0 {
			t.Fatalf("ParseActives(%q) = %d", raw, n)
		}
		v, err := strconv.ParseInt(strings.TrimSpace(raw), 10, 64)
		if want := max(v, 0); err == nil && n != want || err != nil && n != 0 {
			t.Fatalf("ParseActives(%q) = %d", raw, n)
		}
	})
}
