//go:build !linux

package lbtest

// threadCPU returns -1: the thread's CPU time is read on Linux only.
func threadCPU() int64 { return -1 }

// processCPU returns -1: the process's CPU time is read on Linux only.
func processCPU() int64 { return -1 }
