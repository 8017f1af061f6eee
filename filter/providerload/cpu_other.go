//go:build !unix

package providerload

import "time"

func processCPUTime() (time.Duration, bool) { return 0, false }

func loadAverage() (float64, bool) { return 0, false }
