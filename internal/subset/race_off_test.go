//go:build !race

package subset

// raceEnabled is true when the tests run with the race detector (under which
// sync.Pool drops some of what it is given, so pooled scratch allocates).
const raceEnabled = false
