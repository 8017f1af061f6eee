package it

import (
	"flag"
	"runtime"
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
// and keeps the tests that start JVMs waiting until its node starts are
// done. A slot that frees up goes to a waiting test that starts a JVM
// before one that does not: they include the longest tests (the Java mixed
// fleets run 200 to 270 s) and could not start earlier, while the others
// are shorter and have had their turn since the parallel tests began. In
// the order of arrival, the tests that start JVMs waited 20 to 170 s after
// the cluster test for the queue of the others, and the run ended with
// the longest of them alone (docs/testing.md).

var (
	// slots hands out the places of the parallel tests that run at once;
	// made by TestMain with one more place than the run's -parallel.
	slots *slotQueue
	// clusterRuns is held for writing while TestNacosCluster starts nodes;
	// the tests that start JVMs (parallelJVM) take it for reading first.
	clusterRuns sync.RWMutex
)

// slotQueue is a counting semaphore whose waiters are served by class,
// first the JVM tests', each class in the order of arrival.
type slotQueue struct {
	mu      sync.Mutex
	free    int
	waiting [2][]chan struct{} // by class: jvmFirst, then the others
}

// The classes of slotQueue's waiters.
const (
	jvmFirst = 0 // a test that starts a JVM (parallelJVM)
	jvmNone  = 1 // any other parallel test
)

func newSlotQueue(n int) *slotQueue { return &slotQueue{free: n} }

// take returns once the caller has a place; class is jvmFirst or jvmNone.
func (q *slotQueue) take(class int) {
	q.mu.Lock()
	if q.free > 0 {
		q.free--
		q.mu.Unlock()
		return
	}
	ready := make(chan struct{})
	q.waiting[class] = append(q.waiting[class], ready)
	q.mu.Unlock()
	<-ready
}

// give hands a place back: to the first waiter of the first class that has
// one, or to the pool.
func (q *slotQueue) give() {
	q.mu.Lock()
	defer q.mu.Unlock()
	for class, w := range q.waiting {
		if len(w) > 0 {
			close(w[0])
			q.waiting[class] = w[1:]
			return
		}
	}
	q.free++
}

// waiters returns how many callers of take wait, in each class.
func (q *slotQueue) waiters() [2]int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return [2]int{len(q.waiting[jvmFirst]), len(q.waiting[jvmNone])}
}

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
	slots = newSlotQueue(n + 1)
}

// parallel marks t parallel and holds one of the slots while it runs. A
// test whose subtests are parallel calls t.Parallel itself, and each
// subtest calls parallel.
func parallel(t *testing.T) {
	t.Helper()
	t.Parallel()
	takeSlot(t, jvmNone)
}

// takeSlot waits for one of the slots, in class (jvmFirst or jvmNone), and
// gives it back when t ends. The wait counts in t's time as go test -v
// prints it, so it is logged.
func takeSlot(t *testing.T, class int) {
	t.Helper()
	t0 := time.Now()
	slots.take(class)
	t.Cleanup(slots.give)
	if waited := time.Since(t0); waited > time.Second {
		t.Logf("waited %v for a place among the parallel tests", waited.Round(time.Second))
	}
}

// parallelJVM is parallel for a test that starts a JVM (a Dubbo Java
// provider or consumer): it first waits until TestNacosCluster's node
// starts and restarts, JVM starts too, are done, then takes a slot before
// the tests that start none. Beside those node starts a Dubbo Java
// provider registered 20 s into its 60 s warmup (it/doc.go).
func parallelJVM(t *testing.T) {
	t.Helper()
	t.Parallel()
	t0 := time.Now()
	clusterRuns.RLock()
	t.Cleanup(clusterRuns.RUnlock)
	if waited := time.Since(t0); waited > time.Second {
		t.Logf("waited %v for TestNacosCluster's node starts", waited.Round(time.Second))
	}
	takeSlot(t, jvmFirst)
}

// besideParallel runs TestNacosCluster beside the parallel tests that
// start no JVM, without taking a slot: its time is mostly the waits of its
// three Nacos nodes' starts. It takes clusterRuns while go test still runs
// the sequential tests, before any parallelJVM can, and gives it back when
// nodeStartsDone is called, after the test's last node start, or else
// when the test ends, its cleanups included.
func besideParallel(t *testing.T) (nodeStartsDone func()) {
	t.Helper()
	clusterRuns.Lock()
	release := sync.OnceFunc(clusterRuns.Unlock)
	t.Cleanup(release)
	t.Parallel()
	return release
}

// A freed slot goes to the waiting JVM test though it came after another
// test, and each class is served in the order of arrival; with no waiter
// the slot goes back to the pool.
func TestSlotQueueServesTheJVMTestsFirst(t *testing.T) {
	q := newSlotQueue(1)
	q.take(jvmNone) // the one place, taken
	got := make(chan string, 3)
	waitFor := func(want [2]int) {
		for q.waiters() != want {
			runtime.Gosched() // until the goroutine just started waits in take
		}
	}
	go func() { q.take(jvmNone); got <- "other 1" }()
	waitFor([2]int{0, 1})
	go func() { q.take(jvmFirst); got <- "jvm" }()
	waitFor([2]int{1, 1})
	go func() { q.take(jvmNone); got <- "other 2" }()
	waitFor([2]int{1, 2})
	for _, want := range []string{"jvm", "other 1", "other 2"} {
		q.give()
		if g := <-got; g != want {
			t.Fatalf("a freed slot went to %q; want %q", g, want)
		}
	}
	q.give()
	q.take(jvmFirst) // returns at once: the place went back to the pool
	if w := q.waiters(); w != [2]int{0, 0} {
		t.Fatalf("waiters %v after every take returned", w)
	}
}
