//go:build race

package it

// raceEnabled is true when the tests run with the race detector: the
// sample binaries are then built with it too.
const raceEnabled = true
