//go:build unix

package providerload

import (
	"os"
	"syscall"
	"time"

	"github.com/dubbogo-lb/lb/rpcstatus/loadreport"
)

// processCPUTime returns the user and system CPU time of the process.
func processCPUTime() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}

// loadAverage returns the 1-minute load average from /proc/loadavg.
func loadAverage() (float64, bool) {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0, false
	}
	return parseLoadAvg(string(b))
}

// parseLoadAvg reads the first field of /proc/loadavg ("0.52 0.58 0.59
// 1/467 12345").
func parseLoadAvg(s string) (float64, bool) {
	end := 0
	for end < len(s) && s[end] != ' ' && s[end] != '\n' {
		end++
	}
	var r loadreport.Report
	if loadreport.Parse("load:"+s[:end], &r)&loadreport.HasJavaLoad == 0 {
		return 0, false
	}
	return r.JavaLoad, true
}
