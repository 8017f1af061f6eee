package lbtest

import (
	"syscall"
	"unsafe"
)

// threadCPU returns the CPU time of the calling thread in ns (Linux's
// CLOCK_THREAD_CPUTIME_ID), or -1 if it cannot be read: what a call cost
// the CPU, whatever else the machine runs.
func threadCPU() int64 {
	const clockThreadCPUTime = 3
	var ts syscall.Timespec
	if _, _, e := syscall.RawSyscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTime, uintptr(unsafe.Pointer(&ts)), 0); e != 0 {
		return -1
	}
	return ts.Nano()
}

// processCPU returns the CPU time (user and system) the process has used,
// in ns, or -1 if it cannot be read.
func processCPU() int64 {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		return -1
	}
	return u.Utime.Nano() + u.Stime.Nano()
}
