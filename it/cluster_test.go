package it

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestNacosCluster runs providers and consumers against a Nacos cluster of
// three nodes on loopback (it/nacos.sh cluster, on NACOS_CLUSTER_PORTS,
// default 8868 8878 8888), every client configured with all three
// addresses, and its subtests kill or restart nodes under load. It starts
// the cluster once for all of them, and stops it when they are done (a
// healthy cluster that runs already is used, and left running whole). A
// subtest that needs the whole cluster first starts the nodes that do not
// run (whole); the node kill leaves its node down, and the loss of quorum
// after it kills one more and starts both again: one node start fewer than
// starting the killed node at once. It runs beside the parallel tests
// that start no JVM, and those that do wait until its last node start
// (besideParallel): beside a Dubbo Java provider's start, its node starts
// delayed the provider's registration 20 s into its warmup, and the ramp
// could not be told from full weight. Outside CI it skips without a JDK
// (nacos.sh builds the server with one).
//
// docs/nacos-cluster.md has the findings and figures.
func TestNacosCluster(t *testing.T) {
	nodeStartsDone := besideParallel(t)
	began := time.Now()
	c := startCluster(t)
	t.Run("NodeKilledUnderLoadLosesNoCallNorProvider", func(t *testing.T) { testNodeKilled(t, c) })
	t.Run("WithoutQuorumConsumersKeepTheirProviders", func(t *testing.T) { testWithoutQuorum(t, c) })
	t.Run("RollingRestartLosesNoCall", func(t *testing.T) { testRollingRestart(t, c) })
	// The discovery lag starts no node (but one that failed to start above).
	nodeStartsDone()
	t.Logf("the node starts done %v after the test began: the tests that start JVMs may run", time.Since(began).Round(time.Second))
	t.Run("DiscoveryLatency", func(t *testing.T) { testDiscoveryLatency(t, c) })
}

// nacosCluster is the cluster of it/nacos.sh cluster.
type nacosCluster struct {
	addrs []string // host:port of each node's HTTP API, node 1 first
}

// startCluster starts the cluster, or takes the healthy one that runs
// already, and builds the sample binaries; a cluster it started is stopped
// when t ends.
func startCluster(t *testing.T) *nacosCluster {
	t.Helper()
	if _, err := exec.LookPath("java"); err != nil && os.Getenv("JAVA_HOME") == "" {
		missing(t, "no JDK: the Nacos cluster tests need one (it/nacos.sh builds Nacos with it)")
	}
	if _, err := os.Stat(filepath.Join(rootDir, "it", "nacos.sh")); err != nil {
		t.Fatalf("it/nacos.sh not found from the working directory: %v", err)
	}
	t0 := time.Now()
	out, err := clusterScript(30*time.Second, "status")
	reused := err == nil
	if reused {
		t.Logf("a healthy Nacos cluster runs already: using it, and leaving it running\n%s", out)
		setupOnce.Do(func() { setupErr = build() })
	} else {
		// The sample binaries are built while the nodes start: much of a
		// cluster's start is waiting (for the members to see each other,
		// for JRaft's first election).
		type result struct {
			out string
			err error
		}
		started := make(chan result, 1)
		go func() {
			out, err := clusterScript(nacosStartDeadline, "start")
			started <- result{out, err}
		}()
		t.Cleanup(func() {
			if out, err := clusterScript(2*time.Minute, "stop"); err != nil {
				t.Errorf("stopping the Nacos cluster: %v\n%s", err, out)
			}
		})
		setupOnce.Do(func() { setupErr = build() })
		r := <-started
		if r.err != nil {
			t.Fatalf("starting the Nacos cluster: %v\n%s", r.err, tail(r.out, 30))
		}
	}
	if setupErr != nil {
		t.Fatal(setupErr)
	}
	out, err = clusterScript(10*time.Second, "addresses")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	c := &nacosCluster{addrs: strings.Split(strings.TrimSpace(out), ",")}
	if reused {
		t.Cleanup(func() { c.whole(t) })
	}
	t.Logf("Nacos cluster %v ready, and the samples built, in %v", c.addrs, time.Since(t0).Round(100*time.Millisecond))
	return c
}

// env returns the env of the subtest t: every node's address and a group
// of t's own.
func (c *nacosCluster) env(t *testing.T) *env {
	return &env{nacos: strings.Join(c.addrs, ","), group: groupOf(t),
		consumerConf: filepath.Join(rootDir, "conf", "consumer.yaml")}
}

// clusterScript runs it/nacos.sh cluster args..., bounded by timeout.
func clusterScript(timeout time.Duration, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	c := exec.CommandContext(ctx, "bash", append([]string{filepath.Join(rootDir, "it", "nacos.sh"), "cluster"}, args...)...)
	c.Dir = rootDir
	c.Env = append(os.Environ(), "NACOS_AUTH=false",
		"NACOS_START_TIMEOUT="+strconv.Itoa(int(max(timeout-20*time.Second, 30*time.Second)/time.Second)))
	out, err := c.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%w: cluster %s: %w", errNacosScript, strings.Join(args, " "), err)
	}
	return string(out), nil
}

// kill SIGKILLs node n (1-based).
func (c *nacosCluster) kill(t *testing.T, n int) {
	t.Helper()
	if out, err := clusterScript(time.Minute, "kill", strconv.Itoa(n)); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	t.Logf("Nacos node %d (%s) killed", n, c.addrs[n-1])
}

// stop stops node n gracefully (SIGTERM).
func (c *nacosCluster) stop(t *testing.T, n int) {
	t.Helper()
	if out, err := clusterScript(2*time.Minute, "stop", strconv.Itoa(n)); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	t.Logf("Nacos node %d (%s) stopped", n, c.addrs[n-1])
}

// start starts node n again with its data, and waits until every running
// node sees every running node UP.
func (c *nacosCluster) start(t *testing.T, n int) {
	t.Helper()
	t0 := time.Now()
	if out, err := clusterScript(nacosStartDeadline, "start", strconv.Itoa(n)); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	t.Logf("Nacos node %d (%s) started again in %v", n, c.addrs[n-1], time.Since(t0).Round(100*time.Millisecond))
}

// startAll starts the nodes ns again at once, as start does each, and
// returns when the first of them was up; it returns once all are.
func (c *nacosCluster) startAll(t *testing.T, ns []int) (first time.Time) {
	t.Helper()
	type result struct {
		n   int
		out string
		err error
		in  time.Duration
	}
	t0 := time.Now()
	done := make(chan result, len(ns))
	for _, n := range ns {
		go func() {
			out, err := clusterScript(nacosStartDeadline, "start", strconv.Itoa(n))
			done <- result{n, out, err, time.Since(t0)}
		}()
	}
	for range ns {
		r := <-done
		if r.err != nil {
			t.Fatalf("%v\n%s", r.err, r.out)
		}
		if first.IsZero() {
			first = time.Now()
		}
		t.Logf("Nacos node %d (%s) started again in %v", r.n, c.addrs[r.n-1], r.in.Round(100*time.Millisecond))
	}
	return first
}

// down returns the nodes (1-based) whose process does not run.
func (c *nacosCluster) down(t *testing.T) []int {
	t.Helper()
	out, err := clusterScript(30*time.Second, "status")
	if err == nil {
		return nil
	}
	var ns []int
	for i, a := range c.addrs {
		if strings.Contains(out, fmt.Sprintf("node %d (%s): not running", i+1, a)) {
			ns = append(ns, i+1)
		}
	}
	return ns
}

// whole starts, as startAll does, every node that does not run (one an
// earlier subtest left down), so that t finds the whole cluster.
func (c *nacosCluster) whole(t *testing.T) {
	t.Helper()
	if ns := c.down(t); len(ns) > 0 {
		t.Logf("Nacos node(s) %v not running: starting them", ns)
		c.startAll(t, ns)
	}
}

// grpcPorts returns each node's client gRPC port (its HTTP port + 1000).
func (c *nacosCluster) grpcPorts(t *testing.T) []int {
	t.Helper()
	out := make([]int, len(c.addrs))
	for i, a := range c.addrs {
		_, p, _ := strings.Cut(a, ":")
		port, err := strconv.Atoi(p)
		if err != nil {
			t.Fatalf("node address %q: %v", a, err)
		}
		out[i] = port + 1000
	}
	return out
}

// connections counts, per node (index 0 for node 1), the established TCP
// connections of the processes procs to that node's client gRPC port:
// which nodes the clients' Nacos connections are on, from the kernel's
// socket table (/proc/net/tcp{,6}) and each process's descriptors.
func (c *nacosCluster) connections(t *testing.T, procs []*proc) []int {
	t.Helper()
	ours := map[string]bool{} // socket inodes of procs
	for _, p := range procs {
		dir := fmt.Sprintf("/proc/%d/fd", p.cmd.Process.Pid)
		fds, err := os.ReadDir(dir)
		if err != nil {
			t.Fatalf("%s: %v", p.name, err)
		}
		for _, fd := range fds {
			link, err := os.Readlink(filepath.Join(dir, fd.Name()))
			if inode, ok := strings.CutPrefix(link, "socket:["); err == nil && ok {
				ours[strings.TrimSuffix(inode, "]")] = true
			}
		}
	}
	ports := c.grpcPorts(t)
	counts := make([]int, len(ports))
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(table)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			// sl local rem st tx:rx tr:when retrnsmt uid timeout inode
			fs := strings.Fields(sc.Text())
			if len(fs) < 10 || fs[3] != "01" || !ours[fs[9]] { // 01: ESTABLISHED
				continue
			}
			i := strings.LastIndexByte(fs[2], ':')
			port, err := strconv.ParseInt(fs[2][i+1:], 16, 32)
			if err != nil {
				continue
			}
			if n := slices.Index(ports, int(port)); n >= 0 {
				counts[n]++
			}
		}
		f.Close()
	}
	return counts
}

// busiest returns the node (1-based) most of procs' Nacos connections are
// on, and the counts per node.
func (c *nacosCluster) busiest(t *testing.T, procs []*proc) (int, []int) {
	t.Helper()
	counts := c.connections(t, procs)
	best := 0
	for i, n := range counts {
		if n > counts[best] {
			best = i
		}
	}
	if counts[best] == 0 {
		t.Fatalf("no client has a Nacos connection to any node (%v)", counts)
	}
	return best + 1, counts
}

// ---------------------------------------------------------------- consumers' view

// reportLog records every interval report of a consumer as it comes, for
// checks over a whole test that do not block on the consumer.
type reportLog struct {
	c    *consumer
	mu   sync.Mutex
	reps []report
}

// logReports starts recording c's interval reports; from then on only w reads
// them.
func logReports(c *consumer) *reportLog {
	w := &reportLog{c: c}
	if c.first != nil {
		w.reps = append(w.reps, *c.first)
		c.first = nil
	}
	go func() {
		for r := range c.intervals {
			w.mu.Lock()
			w.reps = append(w.reps, r)
			w.mu.Unlock()
		}
	}()
	return w
}

// since returns the reports of the intervals that began at or after t0.
func (w *reportLog) since(t0 time.Time) []report {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []report
	for _, r := range w.reps {
		if !r.start().Before(t0) {
			out = append(out, r)
		}
	}
	return out
}

// waitCalling waits until an interval that began at or after t0 has calls
// to every one of names, and returns the start of the first such interval
// (so the consumer had them all by then at the latest, give or take an
// interval).
func (w *reportLog) waitCalling(t *testing.T, t0 time.Time, timeout time.Duration, names ...string) time.Time {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		for _, r := range w.since(t0) {
			if all(r, names...) {
				return r.start()
			}
		}
		if w.c.exited() {
			t.Fatalf("%s exited (%v); log:\n%s", w.c.name, w.c.err, tail(w.c.log.String(), 30))
		}
		if time.Now().After(deadline) {
			rs := w.since(t0)
			last := "none"
			if len(rs) > 0 {
				last = rs[len(rs)-1].String()
			}
			t.Fatalf("%s: not calling all of %v within %v; last interval: %s", w.c.name, names, timeout, last)
		}
		time.Sleep(100 * time.Millisecond) // polling the reports
	}
}

// longestMissing returns, over the intervals that began at or after t0
// and ended before t1, the longest time one of names got no call in a row
// of intervals while Nacos listed it, and which one. An interval without a
// call to it counts only if it had enough calls to reach every provider
// (swrr: each n consecutive picks go to n providers of equal weight; an
// interval of 3n calls holds a whole cycle whatever the interleaving at its
// ends); one with a call to it ends the run, however few calls it had. A
// run is counted from the last time a node answered without the provider
// (unlisted; nil for never), if that is later than the run's start: a
// consumer cannot call what its registry does not list.
func (w *reportLog) longestMissing(t0, t1 time.Time, unlisted func(name string, before time.Time) time.Time, names ...string) (time.Duration, string) {
	var worst time.Duration
	who := ""
	for _, n := range names {
		var since time.Time // start of the current run without n
		for _, r := range w.since(t0) {
			if r.end.After(t1) {
				break
			}
			if r.By[n] > 0 {
				since = time.Time{}
				continue
			}
			if r.Calls < int64(3*len(names)) {
				continue // too few calls to tell that n is missing
			}
			if since.IsZero() {
				since = r.start()
			}
			from := since
			if unlisted != nil {
				if u := unlisted(n, r.end); u.After(from) {
					from = u
				}
			}
			if d := r.end.Sub(from); d > worst {
				worst, who = d, n
			}
		}
	}
	return worst, who
}

// errorsSince returns the failed calls of the intervals that began at or
// after t0, and the last error.
func (w *reportLog) errorsSince(t0 time.Time) (int64, string) {
	var n int64
	last := ""
	for _, r := range w.since(t0) {
		n += r.Errors
		if r.LastError != "" {
			last = r.LastError
		}
	}
	return n, last
}

// clusterRate is the calls per second of each consumer of clusterLoad: at
// 30, a 500 ms report holds 15 calls, more than the 3 per provider that
// longestMissing needs to tell (12 for four providers), and swrr calls each
// of four providers 37 times within missingBound. The consumers do not run
// flat out (about 110 calls per second each here): the subtests last
// minutes, and the tests beside them need the CPU (at 60, the cluster
// test's 17 consumers made 91 000 calls, a fifth of the it package's).
const clusterRate = 30

// clusterLoad starts the providers specs and n swrr consumers of them in
// e's group, waits until every consumer calls every provider, and returns
// them, the consumers' reports logged (logReports).
func clusterLoad(t *testing.T, e *env, n int, specs ...providerSpec) ([]*provider, []*reportLog) {
	t.Helper()
	ps := make([]*provider, len(specs))
	for i, s := range specs {
		ps[i] = e.startProvider(t, s)
	}
	e.waitRegistered(t, ps...)
	cspecs := make([]consumerSpec, n)
	for i := range cspecs {
		cspecs[i] = consumerSpec{balancer: "swrr", name: fmt.Sprintf("consumer %d", i+1),
			args: []string{"-concurrency", "2", "-interval", "500ms", "-rate", strconv.Itoa(clusterRate)}}
	}
	cs := e.startConsumers(t, len(ps), cspecs...)
	ws := make([]*reportLog, len(cs))
	t0 := time.Now()
	for i, c := range cs {
		ws[i] = logReports(c)
	}
	for _, w := range ws {
		w.waitCalling(t, t0, reactDeadline, names(ps)...)
	}
	return ps, ws
}

func names(ps []*provider) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.spec.name
	}
	return out
}

func procsOf(ps []*provider, ws []*reportLog) []*proc {
	var out []*proc
	for _, p := range ps {
		out = append(out, p.proc)
	}
	for _, w := range ws {
		out = append(out, w.c.proc)
	}
	return out
}

// missingBound is how long a consumer may go without calling a provider
// that every Nacos node answering lists, under any node loss: see
// docs/nacos-cluster.md.
const missingBound = 5 * time.Second

// checkKept fails t for every consumer that failed a call since t0 or went
// without one of names for longer than missingBound between t0 and t1,
// counted while every node that answered l listed the provider. It logs
// the stretches in which a node answered without one of names: Nacos's own
// gaps, which the consumers follow.
func checkKept(t *testing.T, ws []*reportLog, l *listings, t0, t1 time.Time, what string, names ...string) {
	t.Helper()
	for _, n := range names {
		for _, g := range l.gaps(n, t0, t1) {
			t.Logf("%s: Nacos node %s answered without %s from +%v to +%v (%d answers)",
				what, g.node, n, g.from.Sub(t0).Round(100*time.Millisecond), g.to.Sub(t0).Round(100*time.Millisecond), g.polls)
		}
	}
	for _, w := range ws {
		if n, last := w.errorsSince(t0); n != 0 {
			t.Errorf("%s %s: %d failed calls (last: %s); want none", w.c.name, what, n, last)
		}
		d, who := w.longestMissing(t0, t1, l.lastUnlisted, names...)
		if d > missingBound {
			t.Errorf("%s %s: no call to %s for %v while every Nacos node that answered listed it; want every provider called, gaps of at most %v", w.c.name, what, who, d, missingBound)
		} else {
			t.Logf("%s %s: no failed call; longest stretch without a call to a provider Nacos listed: %v", w.c.name, what, d)
		}
	}
}

// listingPoll is how often watchListings asks each node.
const listingPoll = 250 * time.Millisecond

// listings records, for each provider, the answers of Nacos nodes that did
// not list it (watchListings).
type listings struct {
	mu      sync.Mutex
	without map[string][]unlistedAt // by provider name, in time order per node
}

// unlistedAt is one answer of node that did not list a provider.
type unlistedAt struct {
	at   time.Time
	node string
}

// watchListings polls every node of c for e's providers ps every
// listingPoll until t ends, each node on its own (a node that does not
// answer, stopped or starting, delays no other), and records every answer
// that lacks one of ps.
func (c *nacosCluster) watchListings(t *testing.T, e *env, ps []*provider) *listings {
	l := &listings{without: map[string][]unlistedAt{}}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	for _, node := range c.addrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tick := time.NewTicker(listingPoll)
			defer tick.Stop()
			for {
				rctx, rcancel := context.WithTimeout(ctx, 2*time.Second)
				list, err := e.instancesAt(rctx, node, serviceName)
				rcancel()
				if err == nil {
					at := time.Now()
					l.mu.Lock()
					for _, p := range ps {
						if !hasPort(list, p.spec.port) {
							l.without[p.spec.name] = append(l.without[p.spec.name], unlistedAt{at, node})
						}
					}
					l.mu.Unlock()
				}
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
			}
		}()
	}
	return l
}

// lastUnlisted returns the last time before which a node answered without
// the provider name, or the zero time.
func (l *listings) lastUnlisted(name string, before time.Time) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	var last time.Time
	for _, u := range l.without[name] {
		if !u.at.After(before) && u.at.After(last) {
			last = u.at
		}
	}
	return last
}

// listingGap is a run of a node's answers without a provider.
type listingGap struct {
	node     string
	from, to time.Time
	polls    int
}

// gaps returns the runs, between t0 and t1, of a node's answers without
// the provider name: answers at most 4 polls apart make one run.
func (l *listings) gaps(name string, t0, t1 time.Time) []listingGap {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []listingGap
	open := map[string]int{} // node -> index in out of its current run
	for _, u := range l.without[name] {
		if u.at.Before(t0) || u.at.After(t1) {
			continue
		}
		if i, ok := open[u.node]; ok && u.at.Sub(out[i].to) <= 4*listingPoll {
			out[i].to = u.at
			out[i].polls++
			continue
		}
		open[u.node] = len(out)
		out = append(out, listingGap{node: u.node, from: u.at, to: u.at, polls: 1})
	}
	return out
}

// ---------------------------------------------------------------- tests

// SIGKILL the node most clients are connected to, under load: no call
// fails, every consumer keeps calling every provider, and a provider
// started while the node is down is found by every consumer. One provider
// is a Dubbo Java one when a JDK and Maven are here. The node stays down:
// testWithoutQuorum, next, kills one more and starts both again.
func testNodeKilled(t *testing.T, c *nacosCluster) {
	c.whole(t)
	e := c.env(t)
	specs := []providerSpec{{name: "n1", latency: "5ms"}, {name: "n2", latency: "5ms"}, {name: "n3", latency: "5ms"}}
	if javaHere() {
		specs[2].java = true
		specs[2].args = []string{"-register-mode", "interface"}
	}
	ps, ws := clusterLoad(t, e, 3, specs...)
	l := c.watchListings(t, e, ps)
	node, counts := c.busiest(t, procsOf(ps, ws))
	t.Logf("Nacos connections of the providers and consumers per node: %v", counts)

	killed := time.Now()
	c.kill(t, node)
	late := e.startProvider(t, providerSpec{name: "n4", latency: "5ms"})
	all := append(names(ps), "n4")
	for _, w := range ws {
		at := w.waitCalling(t, killed, reactDeadline, all...)
		t.Logf("%s: calls the provider started after the kill %v after the kill", w.c.name, at.Sub(killed).Round(100*time.Millisecond))
	}
	if after := c.connections(t, procsOf(append(ps, late), ws)); after[node-1] != 0 {
		t.Errorf("connections to the killed node %d: %v", node, after)
	} else {
		t.Logf("Nacos connections per node after the kill: %v", after)
	}
	// Ten more seconds: the surviving nodes drop the killed node's clients
	// in this time, and a provider lost with them would show.
	watchFor(10 * time.Second)
	checkKept(t, ws, l, killed, time.Now(), "after the kill of the node most clients were on", names(ps)...)
	for _, w := range ws {
		noErrors(t, w.c, w.c.finish(t))
	}
}

// watchFor lets the load run for d while the consumers report.
func watchFor(d time.Duration) {
	time.Sleep(d) // the consumers keep calling meanwhile; what they saw is checked after
}

// javaHere reports whether the Dubbo Java provider can run: a cached
// build, or a JDK and Maven to build it.
func javaHere() bool {
	if exec.Command("bash", filepath.Join(rootDir, "it", "javaprovider.sh"), "ready").Run() == nil {
		return true
	}
	_, errJava := exec.LookPath("java")
	_, errMvn := exec.LookPath("mvn")
	return errJava == nil && errMvn == nil
}

// Kill every node but one (no quorum), under load, beside the node that
// testNodeKilled left down (two of the three when run alone): the
// consumers keep the providers they know and fail no call; a provider
// started meanwhile is either registered (ephemeral instances are
// Distro's, which needs no quorum) and found, or its failure is in its
// log, never silently lost; once the nodes are back, every node lists the
// true set and every consumer calls exactly it. How long that takes is
// logged.
func testWithoutQuorum(t *testing.T, c *nacosCluster) {
	down := c.down(t)
	if len(down) >= len(c.addrs) {
		t.Fatalf("no Nacos node runs")
	}
	e := c.env(t)
	ps, ws := clusterLoad(t, e, 3,
		providerSpec{name: "q1", latency: "5ms"}, providerSpec{name: "q2", latency: "5ms"}, providerSpec{name: "q3", latency: "5ms"})
	l := c.watchListings(t, e, ps)
	counts := c.connections(t, procsOf(ps, ws))
	// Keep the running node with the fewest clients: most of them lose theirs.
	keep := -1
	for i, n := range counts {
		if !slices.Contains(down, i+1) && (keep < 0 || n < counts[keep]) {
			keep = i
		}
	}
	t.Logf("Nacos connections per node: %v; node(s) %v down already; keeping node %d alone", counts, down, keep+1)
	killed := time.Now()
	for i := range c.addrs {
		if i != keep && !slices.Contains(down, i+1) {
			c.kill(t, i+1)
			down = append(down, i+1)
		}
	}

	late := e.startProvider(t, providerSpec{name: "q4", latency: "5ms"})
	registered := false
	deadline := time.Now().Add(reactDeadline)
	for !registered {
		list, err := e.instancesAt(context.Background(), c.addrs[keep], serviceName)
		registered = err == nil && hasPort(list, late.spec.port)
		if registered || late.exited() || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond) // polling Nacos
	}
	switch {
	case registered:
		t.Logf("without quorum, the provider started meanwhile registered on the surviving node %v after the kill", time.Since(killed).Round(100*time.Millisecond))
		for _, w := range ws {
			at := w.waitCalling(t, killed, reactDeadline, "q1", "q2", "q3", "q4")
			t.Logf("%s: calls it %v after the kill", w.c.name, at.Sub(killed).Round(100*time.Millisecond))
		}
	case late.exited():
		t.Logf("without quorum, the provider started meanwhile failed and said so (exit %v):\n%s", late.err, tail(late.log.String(), 5))
	default:
		t.Fatalf("without quorum, the provider started meanwhile is neither registered nor reported failed after %v:\n%s",
			reactDeadline, tail(late.log.String(), 10))
	}
	watchFor(10 * time.Second)
	checkKept(t, ws, l, killed, time.Now(), "without quorum", names(ps)...)

	// The nodes started again at once (a wait for each in turn was a
	// minute of the package's longest test); quorum is back when the first
	// of them is up.
	quorum := c.startAll(t, down)
	want := names(ps)
	if registered {
		want = append(want, "q4")
	}
	all := append([]*provider(nil), ps...)
	if registered {
		all = append(all, late)
	}
	for i := range c.addrs {
		(&env{nacos: c.addrs[i], group: e.group}).waitRegistered(t, all...)
	}
	t.Logf("every node lists the %d providers %v after quorum was back", len(all), time.Since(quorum).Round(100*time.Millisecond))
	for _, w := range ws {
		at := w.waitCalling(t, quorum, reactDeadline, want...)
		for _, r := range w.since(at) {
			for n := range r.By {
				if !slices.Contains(want, n) {
					t.Errorf("%s calls %s, not one of the providers %v", w.c.name, n, want)
				}
			}
		}
		t.Logf("%s: calls the true set %v %v after quorum was back", w.c.name, want, max(at.Sub(quorum), 0).Round(100*time.Millisecond))
	}
	checkKept(t, ws, l, killed, time.Now(), "through the loss and return of quorum", names(ps)...)
	for _, w := range ws {
		noErrors(t, w.c, w.c.finish(t))
	}
}

// Restart the nodes one by one, as a rolling upgrade does (SIGTERM, start
// with the node's data, wait until every node sees every node UP): no
// call fails, no consumer goes without a provider, and a provider started
// after the roll is found.
func testRollingRestart(t *testing.T, c *nacosCluster) {
	c.whole(t)
	e := c.env(t)
	ps, ws := clusterLoad(t, e, 3,
		providerSpec{name: "r1", latency: "5ms"}, providerSpec{name: "r2", latency: "5ms"}, providerSpec{name: "r3", latency: "5ms"})
	l := c.watchListings(t, e, ps)
	t0 := time.Now()
	for n := range c.addrs {
		c.stop(t, n+1)
		c.start(t, n+1)
		t.Logf("Nacos connections per node after restarting node %d: %v", n+1, c.connections(t, procsOf(ps, ws)))
	}
	t.Logf("rolling restart of %d nodes in %v", len(c.addrs), time.Since(t0).Round(100*time.Millisecond))
	rolled := time.Now()
	late := e.startProvider(t, providerSpec{name: "r4", latency: "5ms"})
	e.waitRegistered(t, append(ps, late)...)
	for _, w := range ws {
		w.waitCalling(t, rolled, reactDeadline, "r1", "r2", "r3", "r4")
	}
	checkKept(t, ws, l, t0, time.Now(), "through the rolling restart", names(ps)...)
	for _, w := range ws {
		noErrors(t, w.c, w.c.finish(t))
	}
}

// clusterLagBound is the longest a new provider may take to reach every
// consumer, from the moment a Nacos node first lists it: see
// docs/nacos-cluster.md for the measured figures it is set against.
const clusterLagBound = 10 * time.Second

// How long a new provider takes to reach every consumer, with one Nacos
// node (the standalone server of DUBBOGO_LB_NACOS; skipped without it) and
// with the three-node cluster: p50, p99 and max over the consumers and
// providers, each at most clusterLagBound.
func testDiscoveryLatency(t *testing.T, c *nacosCluster) {
	t.Run("one node", func(t *testing.T) {
		if os.Getenv(envNacos) == "" {
			missing(t, "%s is not set: no standalone Nacos to compare with", envNacos)
		}
		e := setup(t)
		lagFigures(t, e, []string{e.nacos})
	})
	t.Run("three nodes", func(t *testing.T) {
		c.whole(t)
		lagFigures(t, c.env(t), c.addrs)
	})
}

// lagFigures starts two providers and four consumers in e's group, then
// five more providers one at a time (DUBBOGO_LB_LAG_PROVIDERS of them, for
// more samples), and checks and logs how long each took to reach each
// consumer (discoveryLag).
func lagFigures(t *testing.T, e *env, nodes []string) {
	t.Helper()
	ps := []*provider{
		e.startProvider(t, providerSpec{name: "d1", latency: "5ms"}),
		e.startProvider(t, providerSpec{name: "d2", latency: "5ms"}),
	}
	e.waitRegistered(t, ps...)
	var cspecs []consumerSpec
	for i := range 4 {
		cspecs = append(cspecs, consumerSpec{balancer: "swrr", name: fmt.Sprintf("consumer %d", i+1),
			args: []string{"-concurrency", "2", "-interval", "200ms"}})
	}
	var ws []*reportLog
	for _, c := range e.startConsumers(t, len(ps), cspecs...) {
		ws = append(ws, logReports(c))
	}
	var lags []time.Duration
	k, err := strconv.Atoi(os.Getenv("DUBBOGO_LB_LAG_PROVIDERS"))
	if err != nil || k < 1 {
		k = 5
	}
	for i := range k {
		p := e.startProvider(t, providerSpec{name: fmt.Sprintf("d%d", i+3), latency: "5ms"})
		lags = append(lags, discoveryLag(t, e, nodes, ws, p)...)
		ps = append(ps, p)
	}
	slices.Sort(lags)
	q := func(f float64) time.Duration { return lags[max(int(f*float64(len(lags))+0.999)-1, 0)] }
	t.Logf("discovery lag with %d Nacos node(s) over %d samples (%d providers x %d consumers; 200 ms report intervals): p50 %v, p99 %v, max %v",
		len(nodes), len(lags), k, len(ws), q(0.5).Round(10*time.Millisecond), q(0.99).Round(10*time.Millisecond), lags[len(lags)-1].Round(10*time.Millisecond))
	if worst := lags[len(lags)-1]; worst > clusterLagBound {
		t.Errorf("a new provider took %v to reach a consumer; want at most %v", worst, clusterLagBound)
	}
	for _, w := range ws {
		noErrors(t, w.c, w.c.finish(t))
	}
}

// discoveryLag returns, for each consumer of ws, how long the provider p
// took to reach it: from the moment one of the Nacos nodes (host:port)
// first lists p to the end of the consumer's first report interval with a
// call to p (an upper bound, within one interval). The Nacos nodes are
// polled every 20 ms.
func discoveryLag(t *testing.T, e *env, nodes []string, ws []*reportLog, p *provider) []time.Duration {
	t.Helper()
	deadline := time.Now().Add(reactDeadline)
	var listed time.Time
	for listed.IsZero() {
		for _, n := range nodes {
			if list, err := e.instancesAt(context.Background(), n, serviceName); err == nil && hasPort(list, p.spec.port) {
				listed = time.Now()
				break
			}
		}
		if time.Now().After(deadline) || p.exited() {
			t.Fatalf("%s not listed by any Nacos node within %v:\n%s", p.name, reactDeadline, tail(p.log.String(), 10))
		}
		time.Sleep(20 * time.Millisecond) // polling Nacos
	}
	out := make([]time.Duration, len(ws))
	for i, w := range ws {
		for out[i] == 0 {
			for _, r := range w.since(listed.Add(-time.Minute)) {
				if r.By[p.spec.name] > 0 && r.end.After(listed) {
					out[i] = r.end.Sub(listed)
					break
				}
			}
			if out[i] != 0 {
				recordDiscovery(t, w.c.name, p.spec.name, out[i]) // the suite-wide figures too
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: no call to %s within %v of Nacos listing it", w.c.name, p.spec.name, reactDeadline)
			}
			time.Sleep(50 * time.Millisecond) // polling the reports
		}
	}
	return out
}
