package it

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/dubbogo-lb/lb/extension"
	"github.com/dubbogo-lb/lb/internal/callstats"
	"github.com/dubbogo-lb/lb/internal/racecheck"
)

const (
	// envNacos names the Nacos address the tests use (host:port of its
	// HTTP API); it/test.sh sets it.
	envNacos = "DUBBOGO_LB_NACOS"
	// serviceName is the Nacos service of the greeter interface
	// (samples/internal/greeter.Interface) under interface-level
	// registration.
	serviceName = "providers:org.dubbogo.lb.samples.Greeter::"
)

var (
	setupOnce sync.Once
	setupErr  error
	rootDir   string // the module's root
	binDir    string // the built sample binaries
)

func TestMain(m *testing.M) {
	if wd, err := os.Getwd(); err == nil {
		rootDir = filepath.Dir(wd) // go test runs in it/; build checks it
	}
	takeParallelFlag()
	code := m.Run()
	printDiscovery()
	if binDir != "" {
		_ = os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// env is one test's view of the world: the Nacos address, the test's own
// Nacos group, and for a Nacos with authentication on (setupAuth) the
// test's own namespace and the credentials its processes log in with.
type env struct {
	nacos     string
	group     string
	namespace string // "": public
	username  string // "": no login
	password  string
	// consumerConf is the YAML of the consumers: conf/consumer.yaml, or a
	// copy with the registry's namespace and login (setupAuth).
	consumerConf string
	token        *accessToken // the harness's own login, when username is set
}

// setup skips the test when no Nacos is configured outside CI, fails it
// when CI=true and none is, or when the configured one does not answer,
// and builds the sample binaries once per run.
func setup(t *testing.T) *env {
	t.Helper()
	addr := needEnv(t, envNacos)
	e := &env{nacos: addr, group: groupOf(t)}
	e.prepare(t, envNacos)
	e.consumerConf = filepath.Join(rootDir, "conf", "consumer.yaml")
	return e
}

// needEnv returns the environment variable name, skipping t when it is not
// set outside CI, failing it when CI=true (missing).
func needEnv(t *testing.T, name string) string {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		missing(t, "%s is not set: the integration tests need Nacos (bash it/test.sh starts one and runs them)", name)
	}
	return v
}

// missing ends t for a missing prerequisite, saying why: it skips t on a
// developer's machine, and fails it when CI=true, where every
// prerequisite must be there and no test may skip.
func missing(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true, but "+format, args...)
	}
	t.Skipf(format, args...)
}

// prepare fails t unless e's Nacos (from the environment variable name)
// answers within 20 s, and builds the sample binaries once per run.
func (e *env) prepare(t *testing.T, name string) {
	t.Helper()
	probe := *e
	probe.group = "DEFAULT_GROUP"
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, err := probe.instances(context.Background())
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s=%s but Nacos does not answer: %v", name, e.nacos, err)
		}
		time.Sleep(250 * time.Millisecond) // polling an external server
	}
	setupOnce.Do(func() { setupErr = build() })
	if setupErr != nil {
		t.Fatal(setupErr)
	}
}

// build checks the module's root (rootDir, from TestMain) and builds the
// sample binaries.
func build() error {
	if _, err := os.Stat(filepath.Join(rootDir, "conf", "consumer.yaml")); err != nil {
		return fmt.Errorf("module root not found (%q, from the working directory): %w", rootDir, err)
	}
	var err error
	if binDir, err = os.MkdirTemp("", "dubbogo-lb-it-"); err != nil {
		return err
	}
	// One go build for the three: it compiles and links them in parallel
	// (-o a directory: each binary under its package's name).
	args := []string{"build"}
	if raceEnabled {
		args = append(args, "-race")
	}
	args = append(args, "-o", binDir+string(filepath.Separator), "./samples/provider", "./samples/consumer", "./samples/demo")
	cmd := exec.Command("go", args...)
	cmd.Dir = rootDir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

// groupOf returns a Nacos group for t alone.
func groupOf(t *testing.T) string {
	name := regexp.MustCompile(`[^A-Za-z0-9]+`).ReplaceAllString(t.Name(), "_")
	if len(name) > 40 {
		name = name[:40]
	}
	return fmt.Sprintf("IT_%s_%d", name, time.Now().UnixNano()%1_000_000_000)
}

// balancers returns those of names that the module registers, and fails t
// if none is.
func balancers(t *testing.T, names ...string) []string {
	t.Helper()
	var out []string
	for _, n := range names {
		if slices.Contains(extension.Balancers(), n) {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		t.Fatalf("none of %v is registered (registered: %v)", names, extension.Balancers())
	}
	return out
}

// ---------------------------------------------------------------- processes

// lockedBuffer is a bytes.Buffer safe for concurrent writes and reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// proc is a child process.
type proc struct {
	name    string
	cmd     *exec.Cmd
	log     *lockedBuffer // stderr, and stdout unless read elsewhere
	started time.Time
	done    chan struct{} // closed when it has exited
	err     error         // its exit status, once done
	// sent holds the signals the harness sent it, bit 1<<sig each (0:
	// none), and wantExit the status it must exit with when it ends by
	// itself (expectExit); see watch.
	sent     atomic.Uint64
	wantExit atomic.Int32
}

// startProc starts bin with args; stdout goes to out, or to the log when
// out is nil. The process is watched (see watch).
func startProc(t *testing.T, name, bin string, out io.Writer, args ...string) *proc {
	t.Helper()
	return startProcEnv(t, nil, name, bin, out, args...)
}

// startProcEnv is startProc with env (KEY=value) added to its environment.
func startProcEnv(t *testing.T, env []string, name, bin string, out io.Writer, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, bin), args...)
	// A data race does not change the exit status: checkRaces reads the
	// reports and fails the test for a race in this module's code only.
	cmd.Env = append(os.Environ(), "GORACE=exitcode=0",
		// nacos-sdk-go gives its first connection 3 s to answer the server
		// check, three times, and a provider whose client is not connected
		// then fails to register and exits ("client not connected"): seen
		// when the machine was busy enough to starve Nacos for that long.
		// This is the SDK's own setting for that timeout (milliseconds).
		"nacos.remote.client.grpc.timeout=30000")
	cmd.Env = append(cmd.Env, env...)
	return runProc(t, name, cmd, out)
}

// runProc starts cmd, run in the module's root, with its stderr, and its
// stdout unless out is not nil, in the proc's log, and watches it.
func runProc(t *testing.T, name string, cmd *exec.Cmd, out io.Writer) *proc {
	t.Helper()
	p := &proc{name: name, cmd: cmd, log: new(lockedBuffer), done: make(chan struct{})}
	p.cmd.Dir = rootDir
	p.cmd.Stderr = p.log
	p.cmd.Stdout = p.log
	if out != nil {
		p.cmd.Stdout = out
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	p.started = time.Now()
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	watch(t, p)
	return p
}

// watch makes the end of p part of t's verdict, whatever the callers saw
// (failover retries hide a provider that crashed from them): when t ends,
// p is stopped, and t fails if p's output holds a panic, a fatal runtime
// error or a data race in this module's code (checkRaces), or if p
// exited with a status other than the one expected. Expected: the status
// set by expectExit (0 unless set) when p ended by itself; after the
// harness signalled it (stop, kill, finish), an exit by one of the signals
// it sent, or status 0 (a graceful exit) or 128 + a signal it sent other
// than SIGKILL (the JVM's). Any of them, not only the last: a JVM still
// running its shutdown hooks when stop's grace ends may exit with 143 for
// the SIGTERM just as the SIGKILL goes out.
func watch(t *testing.T, p *proc) {
	t.Cleanup(func() {
		p.stop()
		p.check(t)
		if t.Failed() {
			t.Logf("log of %s:\n%s", p.name, tail(p.log.String(), 30))
			p.saveLog(t)
		}
	})
}

// expectExit sets the status p must exit with when it ends by itself.
func (p *proc) expectExit(code int) { p.wantExit.Store(int32(code)) }

// crashRe matches what a Go runtime (an unrecovered panic, a fatal error)
// or a JVM (a crash, an uncaught exception in main, memory exhausted)
// prints when the process dies of a bug.
var crashRe = regexp.MustCompile(`(?m)^(panic: .*|fatal error: .*|# A fatal error has been detected by the Java Runtime Environment.*|Exception in thread "main".*|.*java\.lang\.OutOfMemoryError.*)$`)

// check fails t if the exited process p crashed, raced in this module's
// code, or exited with a status other than the expected one (see watch).
func (p *proc) check(t *testing.T) {
	t.Helper()
	p.checkRaces(t)
	if m := crashRe.FindString(p.log.String()); m != "" {
		t.Errorf("%s crashed: %q in its output", p.name, m)
	}
	if problem := p.exitProblem(); problem != "" {
		t.Errorf("%s %s", p.name, problem)
	}
}

// exitProblem describes how p's exit differs from the expected one (see
// watch), or returns "".
func (p *proc) exitProblem() string {
	st := p.cmd.ProcessState
	if st == nil {
		return "has no exit status"
	}
	ws, _ := st.Sys().(syscall.WaitStatus)
	sent := p.sent.Load()
	was := func(sig syscall.Signal) bool { return sig > 0 && sig < 64 && sent&(1<<uint(sig)) != 0 }
	switch code := st.ExitCode(); {
	case sent == 0 && code == int(p.wantExit.Load()):
		return ""
	case sent == 0:
		return fmt.Sprintf("exited by itself (%v), want status %d", p.err, p.wantExit.Load())
	case ws.Signaled() && was(ws.Signal()):
		return ""
	case code == 0 || code > 128 && syscall.Signal(code-128) != syscall.SIGKILL && was(syscall.Signal(code-128)):
		return ""
	default:
		return fmt.Sprintf("exited with %v after the harness sent it %s, want an exit by one of those signals or status 0", p.err, signalNames(sent))
	}
}

// signalNames names the signals in a sent mask, in order.
func signalNames(sent uint64) string {
	var names []string
	for sig := syscall.Signal(1); sig < 64; sig++ {
		if sent&(1<<uint(sig)) != 0 {
			names = append(names, sig.String())
		}
	}
	return strings.Join(names, ", ")
}

// signal sends sig to p, and remembers it for exitProblem.
func (p *proc) signal(sig syscall.Signal) {
	p.sent.Or(1 << uint(sig))
	_ = p.cmd.Process.Signal(sig)
}

// exited reports whether the process has exited.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// wait waits up to timeout for the process to exit.
func (p *proc) wait(timeout time.Duration) error {
	select {
	case <-p.done:
		return p.err
	case <-time.After(timeout):
		return fmt.Errorf("%s still running after %v", p.name, timeout)
	}
}

// stop sends SIGTERM, then SIGKILL after 10 s, and waits for the exit.
func (p *proc) stop() {
	if p.exited() {
		return
	}
	p.signal(syscall.SIGTERM)
	if p.wait(10*time.Second) != nil && !p.exited() {
		p.signal(syscall.SIGKILL)
		<-p.done
	}
}

// kill sends SIGKILL and waits for the exit.
func (p *proc) kill() {
	p.signal(syscall.SIGKILL)
	<-p.done
}

// checkRaces fails t for every data race report in the process's output
// whose racing accesses run code of this module, and logs the others
// (races inside dependencies, such as nacos-sdk-go's reconnect).
func (p *proc) checkRaces(t *testing.T) {
	t.Helper()
	ours, theirs := racecheck.Split(p.log.String())
	for _, r := range ours {
		t.Errorf("%s: data race in this module's code:\n%s", p.name, r)
	}
	for _, r := range theirs {
		t.Logf("%s: data race inside a dependency, not in this module (ignored): %s", p.name, r)
	}
}

// saveLog writes the whole output of a process of a failed test to a file
// that outlives the run, and logs where.
func (p *proc) saveLog(t *testing.T) {
	dir := filepath.Join(os.TempDir(), "dubbogo-lb-it-logs", regexp.MustCompile(`[^A-Za-z0-9_-]+`).ReplaceAllString(t.Name(), "_"))
	path := filepath.Join(dir, strings.ReplaceAll(p.name, " ", "-")+".log")
	if err := os.MkdirAll(dir, 0o755); err == nil && os.WriteFile(path, []byte(p.log.String()), 0o644) == nil {
		t.Logf("full log of %s: %s", p.name, path)
	}
}

// handedOut holds the ports freePort returned in this run: tests run in
// parallel, and the kernel may hand the same free port to two of them.
var handedOut = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

// freePort returns a loopback port that was free a moment ago and that no
// other test of this run got from it.
func freePort(t *testing.T) int {
	t.Helper()
	handedOut.Lock()
	defer handedOut.Unlock()
	for {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		if !handedOut.ports[port] {
			handedOut.ports[port] = true
			return port
		}
	}
}

// ---------------------------------------------------------------- providers

// providerSpec describes a sample provider.
type providerSpec struct {
	name    string
	port    int // 0: a free port
	weight  int // 0: 100
	warmup  time.Duration
	latency string   // "": 2ms
	args    []string // more flags
	java    bool     // a Dubbo Java provider (startJavaProvider), not a dubbo-go one
}

// provider is a running sample provider.
type provider struct {
	*proc
	spec providerSpec
	// registered is when the harness first saw it registered
	// (waitRegistered); zero until then.
	registered time.Time
}

// mappingWriters lets one provider at a time write the greeter's
// interface-to-application mapping (see startProvider).
var mappingWriters sync.Mutex

// startProvider starts a provider in e's group; it is stopped when t ends.
//
// A provider that registers at application level writes the greeter's
// interface-to-application mapping, which every test of the run shares,
// when it does not name its application yet; dubbo-go v3.3.2 fails its
// export when another provider creates the mapping at the same moment
// ("config already exist"). Tests run in parallel, so such a provider
// starts only once the one before has its application in the mapping
// (writesMapping, waitMapping).
func (e *env) startProvider(t *testing.T, s providerSpec) *provider {
	t.Helper()
	if !writesMapping(s) {
		return e.startOneProvider(t, s)
	}
	mappingWriters.Lock()
	defer mappingWriters.Unlock()
	p := e.startOneProvider(t, s)
	e.waitMapping(t, appServiceOf(p))
	return p
}

// writesMapping reports whether the provider s registers at application
// level: a Java one unless -register-mode interface (Dubbo Java's default
// is all), a Go one with -registry-type service or all.
func writesMapping(s providerSpec) bool {
	flag, def := "-registry-type", "interface"
	if s.java {
		flag, def = "-register-mode", "all"
	}
	mode := def
	if i := slices.Index(s.args, flag); i >= 0 && i+1 < len(s.args) {
		mode = s.args[i+1]
	}
	return mode != "interface"
}

// withDefaults returns s with a free port, weight 100 and a latency of
// 2 ms where s leaves them unset.
func (s providerSpec) withDefaults(t *testing.T) providerSpec {
	if s.port == 0 {
		s.port = freePort(t)
	}
	if s.weight == 0 {
		s.weight = 100
	}
	if s.latency == "" {
		s.latency = "2ms"
	}
	return s
}

// startOneProvider starts the provider s and nothing else.
func (e *env) startOneProvider(t *testing.T, s providerSpec) *provider {
	t.Helper()
	if s.java {
		return e.startJavaProvider(t, s)
	}
	s = s.withDefaults(t)
	args := append([]string{
		"-conf", filepath.Join(rootDir, "conf", "provider.yaml"),
		"-registry", e.nacos, "-group", e.group,
		"-name", s.name, "-port", strconv.Itoa(s.port),
		"-weight", strconv.Itoa(s.weight), "-warmup", s.warmup.String(), "-latency", s.latency}, s.args...)
	if e.username != "" {
		// Providers log in by flags, consumers by the YAML keys (consumerConf).
		args = append(args, "-namespace", e.namespace, "-username", e.username, "-password", e.password)
	}
	return &provider{spec: s, proc: startProc(t, "provider "+s.name, "provider", nil, args...)}
}

// restart starts a new process for the same provider (same port).
func (e *env) restart(t *testing.T, p *provider) *provider {
	t.Helper()
	return e.startProvider(t, p.spec)
}

// ---------------------------------------------------------------- Nacos

// instance is a Nacos instance as the v1 Open API lists it.
type instance struct {
	IP       string            `json:"ip"`
	Port     int               `json:"port"`
	Weight   float64           `json:"weight"`
	Healthy  bool              `json:"healthy"`
	Enabled  bool              `json:"enabled"`
	Metadata map[string]string `json:"metadata"`
	// ClusterName is the instance's Nacos cluster: its zone.
	ClusterName string `json:"clusterName"`
}

var httpClient = &http.Client{Timeout: 5 * time.Second}

// instances lists the greeter's instances in e's group.
func (e *env) instances(ctx context.Context) ([]instance, error) {
	return e.instancesOf(ctx, serviceName)
}

// instancesOf lists the enabled instances of the Nacos service in e's
// group (the v1 list leaves disabled ones out), from the first node of
// e.nacos (host:port, or a cluster's host:port,host:port,...) that answers.
func (e *env) instancesOf(ctx context.Context, service string) ([]instance, error) {
	var errs []error
	for _, addr := range strings.Split(e.nacos, ",") {
		list, err := e.instancesAt(ctx, addr, service)
		if err == nil {
			return list, nil
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

// instancesAt is instancesOf for the Nacos node at addr.
func (e *env) instancesAt(ctx context.Context, addr, service string) ([]instance, error) {
	q := url.Values{"serviceName": {service}, "groupName": {e.group}}
	if err := e.scope(ctx, q); err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/nacos/v1/ns/instance/list?"+q.Encode(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("nacos instance list: %s: %s", resp.Status, body)
	}
	var list struct {
		Hosts []instance `json:"hosts"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, fmt.Errorf("nacos instance list: %w: %s", err, body)
	}
	return list.Hosts, nil
}

// waitInstances polls Nacos until cond holds for the instances of e's
// group, for up to timeout, and returns them.
func (e *env) waitInstances(t *testing.T, timeout time.Duration, what string, cond func([]instance) bool) []instance {
	t.Helper()
	return e.waitInstancesOf(t, serviceName, timeout, what, cond)
}

// waitInstancesOf is waitInstances for the Nacos service.
func (e *env) waitInstancesOf(t *testing.T, service string, timeout time.Duration, what string, cond func([]instance) bool) []instance {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var (
		last []instance
		err  error
	)
	for {
		last, err = e.instancesOf(context.Background(), service)
		if err == nil && cond(last) {
			return last
		}
		if time.Now().After(deadline) {
			t.Fatalf("Nacos: not %s after %v (instances %v, error %v)", what, timeout, ports(last), err)
		}
		time.Sleep(100 * time.Millisecond) // polling Nacos
	}
}

// waitRegistered waits until exactly the providers ps are registered and
// healthy, and returns their instances in the order of ps.
func (e *env) waitRegistered(t *testing.T, ps ...*provider) []instance {
	t.Helper()
	return e.waitRegisteredIn(t, serviceName, ps...)
}

// waitRegisteredIn is waitRegistered for the Nacos service.
func (e *env) waitRegisteredIn(t *testing.T, service string, ps ...*provider) []instance {
	t.Helper()
	want := make([]int, len(ps))
	for i, p := range ps {
		want[i] = p.spec.port
	}
	slices.Sort(want)
	list := e.waitInstancesOf(t, service, reactDeadline, fmt.Sprintf("registered in %s: ports %v", service, want), func(list []instance) bool {
		var got []int
		for _, in := range list {
			if in.Healthy && in.Enabled {
				got = append(got, in.Port)
			}
		}
		slices.Sort(got)
		return slices.Equal(got, want)
	})
	now := time.Now()
	out := make([]instance, len(ps))
	for i, p := range ps {
		if p.registered.IsZero() {
			p.registered = now
		}
		for _, in := range list {
			if in.Port == p.spec.port {
				out[i] = in
			}
		}
	}
	return out
}

func ports(list []instance) []int {
	var out []int
	for _, in := range list {
		out = append(out, in.Port)
	}
	return out
}

// console edits the instance in of service as the Nacos console's edit
// dialog does: PUT /nacos/v1/ns/instance with the instance's weight,
// enabled and metadata, ephemeral, through the v1 Open API.
func (e *env) console(t *testing.T, service string, in instance, weight float64, enabled bool) {
	t.Helper()
	md, err := json.Marshal(in.Metadata)
	if err != nil {
		t.Fatal(err)
	}
	q := url.Values{
		"serviceName": {service}, "groupName": {e.group}, "clusterName": {"DEFAULT"},
		"ip": {in.IP}, "port": {strconv.Itoa(in.Port)}, "ephemeral": {"true"},
		"weight": {strconv.FormatFloat(weight, 'f', -1, 64)}, "enabled": {strconv.FormatBool(enabled)},
		"metadata": {string(md)},
	}
	if err := e.scope(context.Background(), q); err != nil {
		t.Fatal(err)
	}
	// Three minutes, not httpClient's 5 s: a busy Nacos has taken longer
	// than 5 s to answer an edit (CI-like run at a load average of 44), and
	// longer than a minute to answer two at once (load average 60). Nacos 3
	// writes an ephemeral instance's edited metadata through its Raft group
	// and gives the write 10 s (hard-coded in JRaftProtocol.write); at a
	// load average of 124 it answered "500 ... do metadata operation
	// failed". The edit is idempotent, and an operator whose console shows
	// that error saves again: so does the harness, 2 s later, within the
	// same three minutes, and logs it. How long the edit took is logged
	// when it is more than 5 s.
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodPut, "http://"+e.nacos+"/nacos/v1/ns/instance?"+q.Encode(), nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode >= 500 && ctx.Err() == nil {
			t.Logf("console edit of %s:%d in %s: Nacos answered %s: %s; saving it again", in.IP, in.Port, service, resp.Status, body)
			time.Sleep(2 * time.Second)
			continue
		}
		if resp.StatusCode != http.StatusOK || string(body) != "ok" {
			t.Fatalf("console edit of %s:%d in %s: %s: %s", in.IP, in.Port, service, resp.Status, body)
		}
		break
	}
	took := ""
	if d := time.Since(start); d > 5*time.Second {
		took = fmt.Sprintf(" (Nacos answered after %v)", d.Round(100*time.Millisecond))
	}
	t.Logf("console: %s:%d in %s: weight %g, enabled %v%s", in.IP, in.Port, service, weight, enabled, took)
}

// ---------------------------------------------------------------- consumers

// report is one JSON line of the sample consumer, decoded into the type
// it wrote.
type report struct {
	callstats.Stats

	// end is the end of the interval: the consumer's Time, or when the
	// line was read if it has none.
	end time.Time
}

// start returns when the interval began.
func (r report) start() time.Time {
	return r.end.Add(-time.Duration(r.Seconds * float64(time.Second)))
}

// share returns the share of provider in percent of the successful calls.
func (r report) share(provider string) float64 {
	var ok int64
	for _, n := range r.By {
		ok += n
	}
	if ok == 0 {
		return 0
	}
	return 100 * float64(r.By[provider]) / float64(ok)
}

func (r report) String() string {
	names := slices.Sorted(maps.Keys(r.By))
	var b strings.Builder
	fmt.Fprintf(&b, "%d calls, %d errors", r.Calls, r.Errors)
	for _, n := range names {
		fmt.Fprintf(&b, ", %s %.1f%%", n, r.share(n))
	}
	if r.LastError != "" {
		fmt.Fprintf(&b, " (error: %s)", r.LastError)
	}
	return b.String()
}

// mean returns provider's mean latency in ms over the successful calls of
// r, and whether it had any.
func (r report) mean(provider string) (float64, bool) {
	m, ok := r.MeanMs[provider]
	return m, ok && r.By[provider] > 0
}

// merge adds up reports; the mean latencies are weighted by the calls.
func merge(rs []report) report {
	out := report{Stats: callstats.Stats{By: map[string]int64{}, MeanMs: map[string]float64{}}}
	for _, r := range rs {
		out.Calls += r.Calls
		out.Errors += r.Errors
		out.Seconds += r.Seconds
		for n, c := range r.By {
			out.By[n] += c
			out.MeanMs[n] += float64(c) * r.MeanMs[n]
		}
		if r.LastError != "" {
			out.LastError = r.LastError
		}
		if r.end.After(out.end) {
			out.end = r.end
		}
	}
	for n, c := range out.By {
		if c > 0 {
			out.MeanMs[n] /= float64(c)
		}
	}
	return out
}

// consumer is a running sample consumer printing JSON reports.
type consumer struct {
	*proc
	balancer  string
	intervals chan report
	total     chan report
	first     *report      // an interval already read by startConsumers
	calls     atomic.Int64 // calls of the intervals read, for the log
}

// consumerSpec describes a consumer for startConsumers.
type consumerSpec struct {
	balancer string   // -balancer; "" keeps the YAML's
	name     string   // for messages; default "consumer <balancer>"
	args     []string // more flags
}

// startConsumers starts one consumer per spec, each waiting for n
// providers, and returns them once each has reported once. A consumer that
// does not find every provider within its -ready-timeout exits, and fails
// the test.
func (e *env) startConsumers(t *testing.T, n int, specs ...consumerSpec) []*consumer {
	t.Helper()
	cs := make([]*consumer, len(specs))
	for i, s := range specs {
		args := append([]string{"-providers", strconv.Itoa(n)}, s.args...)
		cs[i] = e.startConsumer(t, s.balancer, args...)
		if s.name != "" {
			cs[i].name = s.name
		}
	}
	for _, c := range cs {
		select {
		case r, ok := <-c.intervals:
			if !ok {
				t.Fatalf("%s exited (%v) before reporting; log:\n%s", c.name, c.err, tail(c.log.String(), 30))
			}
			c.first = &r
		case <-time.After(3 * time.Minute): // -ready-timeout, then a first interval
			t.Fatalf("%s: no report within 3 min; log:\n%s", c.name, tail(c.log.String(), 30))
		}
	}
	return cs
}

// startConsumer starts a consumer in e's group with balancer (by the
// -balancer flag; "" keeps the YAML's) and e.consumerConf unless extra
// sets -conf. It runs until stopped unless extra bounds it;
// it is stopped when t ends.
func (e *env) startConsumer(t *testing.T, balancer string, extra ...string) *consumer {
	t.Helper()
	return e.startConsumerEnv(t, nil, balancer, extra...)
}

// startConsumerEnv is startConsumer with env (KEY=value) added to the
// consumer's environment.
func (e *env) startConsumerEnv(t *testing.T, env []string, balancer string, extra ...string) *consumer {
	t.Helper()
	args := []string{
		"-conf", e.consumerConf,
		"-registry", e.nacos, "-group", e.group, "-json",
		"-interval", "1s", "-duration", "10m", "-concurrency", "4",
		// Every provider must answer before the run: generous for a busy
		// machine (a consumer that misses one never gets it, and fails).
		"-ready-timeout", "2m",
		// No test here is about timeouts, and a machine busy enough
		// stalls a call for seconds now and then (seen: 3 s, the default,
		// exceeded at a load average of 33 on 2 cores).
		"-timeout", "30s",
	}
	if balancer != "" {
		args = append(args, "-balancer", balancer)
	}
	args = append(args, extra...) // later flags win
	c := &consumer{balancer: balancer, intervals: make(chan report, 10000), total: make(chan report, 1)}
	pr, pw := io.Pipe()
	name := "consumer " + balancer
	if balancer == "" {
		name = "consumer (YAML balancer)"
	}
	c.proc = startProcEnv(t, env, name, "consumer", pw, args...)
	// The calls a consumer makes are most of the CPU the tests take (a
	// few ms each, provider and consumer together, with the race
	// detector): the log says how many each made.
	t.Cleanup(func() {
		t.Logf("%s: %d calls in %v", name, c.calls.Load(), time.Since(c.started).Round(time.Second))
	})
	go func() {
		<-c.done
		_ = pw.Close()
	}()
	go c.read(pr)
	return c
}

// read decodes the consumer's JSON lines; other lines go to its log.
func (c *consumer) read(r io.Reader) {
	defer close(c.intervals)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var rep report
		if err := json.Unmarshal(sc.Bytes(), &rep); err != nil || rep.By == nil {
			_, _ = c.log.Write(append(sc.Bytes(), '\n'))
			continue
		}
		rep.end = rep.Time
		if rep.end.IsZero() {
			rep.end = time.Now()
		}
		if rep.Interval {
			c.calls.Add(rep.Calls)
			c.intervals <- rep
		} else {
			c.total <- rep
		}
	}
}

// next returns the next interval report, failing t if none comes within
// timeout.
func (c *consumer) next(t *testing.T, timeout time.Duration) report {
	t.Helper()
	if r := c.first; r != nil {
		c.first = nil
		return *r
	}
	select {
	case r, ok := <-c.intervals:
		if !ok {
			t.Fatalf("%s exited (%v) before reporting; log:\n%s", c.name, c.err, tail(c.log.String(), 30))
		}
		return r
	case <-time.After(timeout):
		t.Fatalf("%s: no report within %v; log:\n%s", c.name, timeout, tail(c.log.String(), 30))
	}
	panic("unreachable")
}

// reportTimeout bounds the wait for one interval report (the consumer
// reports every second): a consumer silent that long is stuck, not slow.
const reportTimeout = time.Minute

// collectDeadline bounds collectCalls. A busy machine only makes a
// measurement take longer: at the 50 calls a second of a consumer on two
// cores shared with other work, 3000 calls take one minute.
const collectDeadline = 4 * time.Minute

// collectCalls reads interval reports until they add up to at least want
// successful calls, and returns their sum. It fails t only when
// collectDeadline passes first: shares are measured on enough calls
// whatever the machine's load, and the tolerance of a check then follows
// from the number of calls measured (see shareTol).
func (c *consumer) collectCalls(t *testing.T, want int64) report {
	t.Helper()
	return c.collectCallsTo(t, want)
}

// collectCallsTo is collectCalls over the intervals in which every
// provider of names answered a call: for a share that assumes every
// provider listed, the intervals in which a busy machine's Nacos had lost
// one (every client reconnected at once, or its keeper registered it
// again; docs/testing.md) are left out, and their number logged. No
// names: every interval.
func (c *consumer) collectCallsTo(t *testing.T, want int64, names ...string) report {
	t.Helper()
	deadline := time.Now().Add(collectDeadline)
	var rs []report
	var last report
	skipped := 0
	for {
		left := time.Until(deadline)
		if left <= 0 && (len(rs) > 0 || skipped > 0) {
			m := merge(rs)
			t.Fatalf("%s: %d successful calls in %v (%d intervals, %d more without a call to one of %v), want %d: the consumer is stuck; last interval: %v",
				c.name, successes(m), collectDeadline, len(rs), skipped, names, want, last)
		}
		last = c.next(t, min(max(left, 0), reportTimeout)+2*time.Second)
		if !all(last, names...) {
			skipped++
			continue
		}
		rs = append(rs, last)
		if m := merge(rs); successes(m) >= want {
			if skipped > 0 {
				t.Logf("%s: %d report intervals left out, each without a call to one of %v", c.name, skipped, names)
			}
			return m
		}
	}
}

// successes returns the successful calls of r.
func successes(r report) int64 {
	var n int64
	for _, c := range r.By {
		n += c
	}
	return n
}

// until reads interval reports until cond holds for one, and returns it;
// it fails t after timeout.
func (c *consumer) until(t *testing.T, timeout time.Duration, what string, cond func(report) bool) report {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last report
	for {
		left := time.Until(deadline)
		if left <= 0 {
			t.Fatalf("%s: not %s within %v; last interval: %v", c.name, what, timeout, last)
		}
		last = c.next(t, left+2*time.Second)
		if cond(last) {
			return last
		}
	}
}

// finish stops the consumer with SIGINT and returns its totals.
func (c *consumer) finish(t *testing.T) report {
	t.Helper()
	if !c.exited() {
		c.signal(syscall.SIGINT)
	}
	return c.result(t, 30*time.Second)
}

// result waits for the consumer to exit and returns its totals.
func (c *consumer) result(t *testing.T, timeout time.Duration) report {
	t.Helper()
	if err := c.wait(timeout); err != nil {
		t.Fatalf("%s: %v; log:\n%s", c.name, err, tail(c.log.String(), 30))
	}
	// The reader delivers the totals before it sees the end of the output.
	select {
	case r := <-c.total:
		return r
	case <-time.After(5 * time.Second):
		t.Fatalf("%s printed no totals; log:\n%s", c.name, tail(c.log.String(), 30))
	}
	panic("unreachable")
}

// all returns true when every provider in names got calls in r.
func all(r report, names ...string) bool {
	for _, n := range names {
		if r.By[n] == 0 {
			return false
		}
	}
	return true
}

// ---------------------------------------------------------------- discovery lag

// discoveryBound bounds the discovery lag that recordDiscovery accepts:
// how long a consumer may take to call a provider that registered while
// it ran. A second or two on an idle machine (Nacos pushes the change,
// dubbo-go refers the new provider, the consumer reports each second);
// the bound leaves room for two busy cores shared with the whole parallel
// suite, where every one of those steps waits for CPU (the figures that
// TestMain prints at the end of each run).
const discoveryBound = 45 * time.Second

// discovery holds the discovery lags recorded in this run (recordDiscovery).
var discovery struct {
	sync.Mutex
	lags []time.Duration
}

// recordDiscovery records that consumer took lag to find provider, which
// registered while it ran, and fails t if that is more than
// discoveryBound. TestMain prints the lags of the run, p50, p99 and
// max. Tests that measure discovery their own way call it too.
func recordDiscovery(t *testing.T, consumer, provider string, lag time.Duration) {
	t.Helper()
	discovery.Lock()
	discovery.lags = append(discovery.lags, lag)
	discovery.Unlock()
	if lag > discoveryBound {
		t.Errorf("%s took %v to find %s, more than %v", consumer, lag.Round(100*time.Millisecond), provider, discoveryBound)
	} else {
		t.Logf("%s found %s %v after it registered", consumer, provider, lag.Round(100*time.Millisecond))
	}
}

// finds waits up to reactDeadline for c to call p, a provider started
// while c runs, records the lag (recordDiscovery) and returns the first
// report with a call to p. The lag runs from when the harness saw p
// registered (or, before waitRegistered, p's start) to the end of that
// report: up to a report interval (1 s) above the truth.
func (c *consumer) finds(t *testing.T, p *provider) report {
	t.Helper()
	r := c.until(t, reactDeadline, "finding "+p.spec.name, func(r report) bool { return r.By[p.spec.name] > 0 })
	from := p.registered
	if from.IsZero() {
		from = p.started
	}
	recordDiscovery(t, c.name, p.spec.name, max(r.end.Sub(from), 0))
	return r
}

// printDiscovery prints the discovery lags of the run: how many, p50,
// p99 and max.
func printDiscovery() {
	discovery.Lock()
	defer discovery.Unlock()
	lags := slices.Clone(discovery.lags)
	if len(lags) == 0 {
		return
	}
	slices.Sort(lags)
	q := func(p float64) time.Duration {
		return lags[min(int(p*float64(len(lags))), len(lags)-1)].Round(100 * time.Millisecond)
	}
	fmt.Printf("discovery lag of %d new providers: p50 %v, p99 %v, max %v (bound %v)\n",
		len(lags), q(0.5), q(0.99), lags[len(lags)-1].Round(100*time.Millisecond), discoveryBound)
}

// errNacosScript is returned when it/nacos.sh fails.
var errNacosScript = errors.New("it/nacos.sh failed")

// nacosScript runs it/nacos.sh cmd for the Nacos of e, bounded by timeout.
func (e *env) nacosScript(cmd string, timeout time.Duration) (string, error) {
	_, port, err := net.SplitHostPort(e.nacos)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	c := exec.CommandContext(ctx, "bash", filepath.Join(rootDir, "it", "nacos.sh"), cmd)
	c.Dir = rootDir
	// The script's own wait for readiness ends a little before ours.
	c.Env = append(os.Environ(), "NACOS_PORT="+port, "NACOS_AUTH=false",
		"NACOS_START_TIMEOUT="+strconv.Itoa(int(max(timeout-20*time.Second, 30*time.Second)/time.Second)))
	out, err := c.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%w: %s: %w", errNacosScript, cmd, err)
	}
	return string(out), nil
}
