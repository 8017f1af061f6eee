//go:build race

package lalb

// raceEnabled is true in a -race build. The measurements of whole
// simulations (TestRefreshRates, TestCompareP) run on one goroutine, where
// the race detector has nothing to find and only multiplies their time;
// they run without it (it/test.sh runs them so after the -race pass).
const raceEnabled = true
