package filter

import (
	"strconv"
	"strings"
	"testing"
)

// FuzzParseActives checks the actives parameter: a limit only from a
// positive integer, no limit (0) from anything else, never a panic.
func FuzzParseActives(f *testing.F) {
	for _, s := range []string{"", "1", " 8 ", "0", "-3", "abc", "1.5", "9223372036854775807", "9223372036854775808", "+2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		n := parseActives(raw)
		if n < 0 {
			t.Fatalf("parseActives(%q) = %d", raw, n)
		}
		v, err := strconv.ParseInt(strings.TrimSpace(raw), 10, 64)
		if want := max(v, 0); err == nil && n != want || err != nil && n != 0 {
			t.Fatalf("parseActives(%q) = %d", raw, n)
		}
	})
}
