package it

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"
)

// The Dubbo Java provider of the greeter (it/javaprovider, run by
// it/javaprovider.sh): providerSpec.java starts one in place of a dubbo-go
// provider.

var (
	javaOnce sync.Once
	javaErr  error  // the build failed
	javaMiss string // "": a JDK and Maven (or a cached build) are here; else what is missing
)

// javaInstallDeadline bounds the build of the Java provider on first use:
// Maven resolves about 40 MB of jars into an empty ~/.m2 in a minute or two;
// .ci/run builds it before the tests, so that CI never waits here.
const javaInstallDeadline = 10 * time.Minute

// needJava skips t when neither a cached build of the Java provider nor a
// JDK and Maven to build it are present, outside CI; fails it when CI=true
// (as a missing Nacos does), or when the build fails. The first call builds
// the provider if needed (it/javaprovider.sh install).
func needJava(t *testing.T) {
	t.Helper()
	javaOnce.Do(func() {
		script := filepath.Join(rootDir, "it", "javaprovider.sh")
		if exec.Command("bash", script, "ready").Run() == nil {
			return
		}
		for _, tool := range []string{"java", "mvn"} {
			if _, err := exec.LookPath(tool); err != nil {
				javaMiss = tool
				return
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), javaInstallDeadline)
		defer cancel()
		out, err := exec.CommandContext(ctx, "bash", script, "install").CombinedOutput()
		if err != nil {
			javaErr = fmt.Errorf("it/javaprovider.sh install: %w\n%s", err, tail(string(out), 30))
		}
	})
	switch {
	case javaErr != nil:
		t.Fatal(javaErr)
	case javaMiss != "":
		missing(t, "no %s on PATH: the Java provider tests need a JDK 17+ and Maven, or a build cached by it/javaprovider.sh install (.ci/run builds it)", javaMiss)
	}
}

// startJavaProvider starts a Java provider in e's group with the flags of
// s (weight, warmup in milliseconds, latency, name, and s.args: e.g.
// -register-mode); it is stopped when t ends. startProvider calls it for
// a spec with java set.
func (e *env) startJavaProvider(t *testing.T, s providerSpec) *provider {
	t.Helper()
	needJava(t)
	s = s.withDefaults(t)
	args := append([]string{"run",
		"-registry", e.nacos, "-group", e.group,
		"-name", s.name, "-port", strconv.Itoa(s.port),
		"-weight", strconv.Itoa(s.weight), "-warmup", strconv.FormatInt(s.warmup.Milliseconds(), 10),
		"-latency", s.latency}, s.args...)
	if e.username != "" {
		args = append(args, "-namespace", e.namespace, "-username", e.username, "-password", e.password)
	}
	// The script execs the JVM: a signal to this process reaches Dubbo,
	// whose shutdown hook unregisters the provider (2 to 3 s).
	p := startJava(t, "java provider "+s.name, args...)
	return &provider{spec: s, proc: p}
}

// startJava runs it/javaprovider.sh with args (run or consume, and their
// flags), its output in the proc's log; the process is watched (watch).
func startJava(t *testing.T, name string, args ...string) *proc {
	t.Helper()
	return runProc(t, name, exec.Command("bash", append([]string{filepath.Join(rootDir, "it", "javaprovider.sh")}, args...)...), nil)
}
