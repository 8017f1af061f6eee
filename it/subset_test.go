package it

import (
	"bufio"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestSubsetConnectionsAndReplacement: a real Nacos, four providers, three
// consumers with lb.subset.size 2. Two draw by aperture (each registered
// under its own address, DUBBO_PORT_TO_REGISTRY): their subsets are
// disjoint and cover the four, so each provider gets half of one
// consumer's calls; the third ranks by rendezvous (lb.subset.mode) and
// takes no place on the ring. The rendezvous consumer's established TCP
// connections to providers (read from /proc) are exactly the 2 providers
// that answer its calls. An aperture consumer is connected to the 2 that
// answer its calls, and may keep idle connections to providers it held
// while it was the only consumer on the ring at start: dubbo-go v3.3.2's
// triple invoker does not close its connection when destroyed
// (clientManager.close does nothing). A provider of the rendezvous consumer's
// subset is stopped: that subset replaces it by exactly one provider, the
// aperture subsets drop it and keep 2 serving members each, and no call
// fails.
func TestSubsetConnectionsAndReplacement(t *testing.T) {
	parallel(t) // schedule_test.go
	e := setup(t)
	var ps []*provider
	for i := range 4 {
		ps = append(ps, e.startProvider(t, providerSpec{name: fmt.Sprintf("s%d", i+1)}))
	}
	e.waitRegistered(t, ps...)
	byPort := map[int]string{}
	for _, p := range ps {
		byPort[p.spec.port] = p.spec.name
	}
	args := []string{"-providers", "2", "-param", "lb.subset.size=2", "-rate", "100", "-concurrency", "2"}
	a := e.startConsumerEnv(t, []string{"DUBBO_PORT_TO_REGISTRY=30001"}, "swrr", args...)
	b := e.startConsumerEnv(t, []string{"DUBBO_PORT_TO_REGISTRY=30002"}, "swrr", args...)
	r := e.startConsumerEnv(t, []string{"DUBBO_PORT_TO_REGISTRY=30003"}, "swrr", append(args, "-param", "lb.subset.mode=rendezvous")...)
	a.name, b.name, r.name = "consumer aperture 1", "consumer aperture 2", "consumer rendezvous"
	cs := []*consumer{a, b, r}

	// held waits until c's connections to providers and the providers
	// that answer its calls are the same 2, twice in a row, and returns
	// them.
	held := func(c *consumer, not string, exact bool) []string {
		t.Helper()
		var last []string
		var conns []string
		tries := 0
		c.until(t, reactDeadline, "holding 2 providers, connected to them only", func(rep report) bool {
			called := answeredBy(rep)
			conns = connectedProviders(t, c.cmd.Process.Pid, byPort)
			connected := slices.Equal(called, conns)
			if !exact {
				connected = !slices.ContainsFunc(called, func(n string) bool { return !slices.Contains(conns, n) })
			}
			ok := len(called) == 2 && connected && !slices.Contains(called, not)
			if ok && slices.Equal(called, last) {
				return true
			}
			if ok {
				last = called
			} else {
				last = nil
				if tries++; tries%10 == 0 {
					t.Logf("%s: calls answered by %v, connected to %v", c.name, called, conns)
				}
			}
			return false
		})
		t.Logf("%s holds %v, connected to %v", c.name, last, conns)
		return last
	}
	before := map[*consumer][]string{}
	for _, c := range cs {
		before[c] = held(c, "", c == r)
	}
	// The aperture subsets are disjoint and cover the four providers.
	union := append(slices.Clone(before[a]), before[b]...)
	slices.Sort(union)
	if want := []string{"s1", "s2", "s3", "s4"}; !slices.Equal(union, want) {
		t.Fatalf("aperture subsets %v and %v, want disjoint ones covering %v", before[a], before[b], want)
	}

	// Even: each provider gets a quarter of the aperture consumers' calls.
	ra, rb := a.collectCalls(t, 1000), b.collectCalls(t, 1000)
	both := merge([]report{ra, rb})
	n := successes(both)
	for _, p := range ps {
		want := 25.0
		within(t, "aperture consumers' calls to "+p.spec.name, both.share(p.spec.name), want, shareTol(want, n, 2*edgeAllowance))
	}

	// Stop a provider of the rendezvous consumer's subset.
	gone := before[r][0]
	for _, p := range ps {
		if p.spec.name == gone {
			p.stop()
		}
	}
	after := held(r, gone, true)
	kept := slices.DeleteFunc(slices.Clone(before[r]), func(n string) bool { return n == gone })
	if !slices.Contains(after, kept[0]) {
		t.Errorf("rendezvous subset %v became %v after %s stopped: want %s kept and one provider added", before[r], after, gone, kept[0])
	}
	for _, c := range []*consumer{a, b} {
		got := c.until(t, reactDeadline, "without "+gone, func(rep report) bool {
			return rep.By[gone] == 0 && len(answeredBy(rep)) >= 2 && !slices.Contains(connectedProviders(t, c.cmd.Process.Pid, byPort), gone)
		})
		t.Logf("%s after %s stopped: %v (held %v before)", c.name, gone, answeredBy(got), before[c])
	}
	for _, c := range cs {
		total := c.finish(t)
		if total.Errors != 0 {
			t.Errorf("%s: %d failed calls (last: %s)", c.name, total.Errors, total.LastError)
		}
	}
}

// answeredBy returns the providers that answered calls in rep, sorted.
func answeredBy(rep report) []string {
	return slices.DeleteFunc(rep.Providers(), func(name string) bool { return rep.By[name] <= 0 })
}

// connectedProviders returns the names of the providers (byPort) to which
// the process pid has an established TCP connection: its sockets (from
// /proc/pid/fd) matched with the connections of its network namespace
// (/proc/pid/net/tcp and tcp6).
func connectedProviders(t *testing.T, pid int, byPort map[int]string) []string {
	t.Helper()
	inodes := map[string]bool{}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatalf("reading the sockets of %d: %v", pid, err)
	}
	for _, fd := range fds {
		link, err := os.Readlink(filepath.Join(fmt.Sprintf("/proc/%d/fd", pid), fd.Name()))
		if inode, ok := strings.CutPrefix(link, "socket:["); err == nil && ok {
			inodes[strings.TrimSuffix(inode, "]")] = true
		}
	}
	found := map[string]bool{}
	for _, table := range []string{"tcp", "tcp6"} {
		f, err := os.Open(fmt.Sprintf("/proc/%d/net/%s", pid, table))
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
			fields := strings.Fields(sc.Text())
			if len(fields) < 10 || fields[3] != "01" || !inodes[fields[9]] {
				continue
			}
			_, hexPort, _ := strings.Cut(fields[2], ":")
			port, err := strconv.ParseInt(hexPort, 16, 32)
			if name, ok := byPort[int(port)]; err == nil && ok {
				found[name] = true
			}
		}
		f.Close()
	}
	return slices.Sorted(maps.Keys(found))
}
