package it

import (
	"flag"
	"strconv"
	"sync"
	"testing"
	"time"
)

// How the tests share the machine (it/doc.go says which run alone and why).
// go test runs the tests that do not call t.Parallel first, one at a time;
// then the parallel ones start. Among those the harness, not go test,
// bounds how many run at once: parallel and parallelJVM take one of the
// run's slots (one more than -parallel, GOMAXPROCS by default: most of a
// parallel test's time is waits for registrations, edits to arrive and
// warmup ramps, with paced consumers, so one test a core leaves CPU
// idle), while
// TestNacosCluster runs beside them in a place of its own (besideParallel)
// and keeps the tests that start JVMs waiting until it is done.

var (
	// slots holds a token for each parallel test that runs; made by
	// TestMain with the run's -parallel as capacity.
	slots chan struct{}
	// clusterRuns is held for writing while TestNacosCluster runs; the
	// tests that start JVMs (parallelJVM) take it for reading first.
	clusterRuns sync.RWMutex
)

// takeParallelFlag makes one more than the run's -parallel the number of
// slots, and
// lifts go test's own bound so that it does not count TestNacosCluster nor
// a test waiting for clusterRuns. Called by TestMain before m.Run.
func takeParallelFlag() {
	if !flag.Parsed() {
		flag.Parse()
	}
	n := 2
	if f := flag.Lookup("test.parallel"); f != nil {
		if v, err := strconv.Atoi(f.Value.String()); err == nil && v > 0 {
			n = v
		}
		_ = f.Value.Set("1024")
	}
	slots = make(chan struct{}, n+1)
}

// parallel marks t parallel and holds one of the slots while it runs. A
// test whose subtests are parallel calls t.Parallel itself, and each
// subtest calls parallel.
func parallel(t *testing.T) {
	t.Helper()
	t.Parallel()
	takeSlot(t)
}

// takeSlot waits for one of the slots and gives it back when t ends. The
// wait counts in t's time as go test -v prints it, so it is logged.
func takeSlot(t *testing.T) {
	t.Helper()
	t0 := time.Now()
	slots <- struct{}{}
	t.Cleanup(func() { <-slots })
	if waited := time.Since(t0); waited > time.Second {
		t.Logf("waited %v for a place among the parallel tests", waited.Round(time.Second))
	}
}

// parallelJVM is parallel for a test that starts a JVM (a Dubbo Java
// provider or consumer): it first waits until TestNacosCluster is done,
// whose node starts and restarts are JVM starts too. Beside them a Dubbo
// Java provider registered 20 s into its 60 s warmup (it/doc.go).
func parallelJVM(t *testing.T) {
	t.Helper()
	t.Parallel()
	t0 := time.Now()
	clusterRuns.RLock()
	t.Cleanup(clusterRuns.RUnlock)
	if waited := time.Since(t0); waited > time.Second {
		t.Logf("waited %v for TestNacosCluster to end", waited.Round(time.Second))
	}
	takeSlot(t)
}

// besideParallel runs TestNacosCluster beside the parallel tests that
// start no JVM, without taking a slot: its time is mostly the waits of its
// three Nacos nodes' starts. It takes clusterRuns while go test still runs
// the sequential tests, before any parallelJVM can, and gives it back when
// the cluster test ends, its cleanups included.
func besideParallel(t *testing.T) {
	t.Helper()
	clusterRuns.Lock()
	t.Cleanup(clusterRuns.Unlock)
	t.Parallel()
}
