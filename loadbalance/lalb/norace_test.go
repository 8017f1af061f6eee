//go:build !race

package lalb

// raceEnabled is true in a -race build; see race_test.go.
const raceEnabled = false
