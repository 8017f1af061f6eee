//go:build unix

package providerload

import "runtime"

func numCPU() int { return runtime.NumCPU() }
