//go:build !race

package ringhash

// raceEnabled is true in a -race build, where sync.Pool drops a share of
// what it is given on purpose, so pooled buffers are reallocated.
const raceEnabled = false
