package nacosdiscovery

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"testing"

	"github.com/dubbogo/gost/log/logger"

	"github.com/dubbogo-lb/lb/internal/racecheck"
)

// The Nacos scenarios run in a child process of the test binary. The Nacos
// client (nacos-sdk-go, v2.2.5 and v2.3.2 alike) has data races of its
// own, on reconnect and in its cache, that no caller can avoid; in-process
// the race detector would fail the test for them. The child reports the
// races to its output, where the parent fails the test for those in this
// module's code only, as the it/ harness does for its processes.

// scenarios are the Nacos scenarios, by name.
var scenarios = map[string]func(tb){
	"upstream":  upstreamListenerMissesAProviderPushedBeforeSubscribe,
	"fixed":     providerPushedBeforeSubscribeIsFound,
	"30":        everyConsumerFindsEveryProviderWhateverItsStart,
	"stale":     staleCallbackIsRepairedFromTheServer,
	"auth":      providersBehindALoginInANamespace,
	"unhealthy": everyInstanceUnhealthyKeepsTheList,
}

// The fault, reproduced with dubbo-go's own Nacos listener: it keeps the
// baseline of its query and is never told of the push it missed.
func TestUpstreamListenerMissesAProviderPushedBeforeSubscribe(t *testing.T) {
	runChild(t, envNacos, "upstream")
}

// The same order of events through this package: the consumer has every
// provider right after it subscribes.
func TestProviderPushedBeforeSubscribeIsFound(t *testing.T) { runChild(t, envNacos, "fixed") }

// At least 30 consumers started 0-1 s after a provider registers all find
// every provider within 5 s.
func TestEveryConsumerFindsEveryProviderWhateverItsStart(t *testing.T) { runChild(t, envNacos, "30") }

// A stale callback of the Nacos client is repaired from the server.
func TestStaleCallbackIsRepairedFromTheServer(t *testing.T) { runChild(t, envNacos, "stale") }

const envChild = "NACOSDISCOVERY_SCENARIO"

func TestMain(m *testing.M) {
	if name := os.Getenv(envChild); name != "" {
		logger.SetLoggerLevel("warn") // dubbo-go logs to standard output, the parent's channel
		c := &childT{name: name}
		func() {
			defer c.runCleanups()
			scenarios[name](c)
		}()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// tb is what the scenarios need of a test; *testing.T has it too.
type tb interface {
	Helper()
	Name() string
	Logf(format string, args ...any)
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
	Fatal(args ...any)
	TempDir() string
	Cleanup(func())
}

// childT is the tb of a scenario in the child: it writes each message as a
// JSON line for the parent.
type childT struct {
	name     string
	mu       sync.Mutex
	cleanups []func()
}

type message struct {
	Log   string `json:"log,omitempty"`
	Error string `json:"error,omitempty"`
}

func (c *childT) emit(m message) {
	b, _ := json.Marshal(m)
	c.mu.Lock()
	defer c.mu.Unlock()
	fmt.Fprintf(os.Stdout, "%s\n", b)
}

func (c *childT) Helper()                   {}
func (c *childT) Name() string              { return c.name }
func (c *childT) Logf(f string, a ...any)   { c.emit(message{Log: fmt.Sprintf(f, a...)}) }
func (c *childT) Errorf(f string, a ...any) { c.emit(message{Error: fmt.Sprintf(f, a...)}) }
func (c *childT) Fatal(a ...any)            { c.Fatalf("%s", fmt.Sprint(a...)) }
func (c *childT) Cleanup(f func())          { c.mu.Lock(); c.cleanups = append(c.cleanups, f); c.mu.Unlock() }
func (c *childT) Fatalf(f string, a ...any) {
	c.Errorf(f, a...)
	c.runCleanups()
	os.Exit(0)
}

func (c *childT) TempDir() string {
	dir, err := os.MkdirTemp("", "nacosdiscovery-")
	if err != nil {
		c.Fatal(err)
	}
	c.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

func (c *childT) runCleanups() {
	c.mu.Lock()
	fs := c.cleanups
	c.cleanups = nil
	c.mu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
}

// Through a Nacos with authentication on, in a namespace of its own, the
// consumer finds the provider, and the resync's reads of the server log in.
func TestNacosAuthProvidersBehindALoginInANamespace(t *testing.T) {
	runChild(t, envNacosAuth, "auth")
}

// runChild runs scenario name, which needs the Nacos in the environment
// variable nacos, in a child process and reports its messages and the data
// races in this module's code as t's.
func runChild(t *testing.T, nacos, name string) {
	needNacos(t, nacos)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), envChild+"="+name, "GORACE=exitcode=0")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Errorf("scenario %s: %v\n%s", name, err, stderr.String())
	}
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var m message
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			continue
		}
		if m.Error != "" {
			t.Error(m.Error)
		} else {
			t.Log(m.Log)
		}
	}
	ours, theirs := racecheck.Split(stderr.String())
	for _, r := range ours {
		t.Errorf("data race in this module's code:\n%s", r)
	}
	for _, r := range theirs {
		t.Logf("data race inside a dependency (ignored): %s", r)
	}
}
