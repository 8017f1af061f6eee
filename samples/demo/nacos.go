package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/dubbogo-lb/lb/internal/callstats"
	"github.com/dubbogo-lb/lb/samples/internal/greeter"
	"github.com/dubbogo-lb/lb/samples/internal/load"
)

// withNacos runs the demo with Nacos, provider processes and consumer
// processes.
func withNacos(ctx context.Context, o options) (err error) {
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	if !nacosUp(ctx, o.nacosAddr) {
		if o.nacosAddr != "127.0.0.1:8848" {
			return fmt.Errorf("no Nacos answers on %s", o.nacosAddr)
		}
		fmt.Println("starting Nacos with it/nacos.sh (the first run downloads and builds it)...")
		if err := script(ctx, root, "start"); err != nil {
			return fmt.Errorf("it/nacos.sh start: %w", err)
		}
		defer func() {
			if e := script(context.WithoutCancel(ctx), root, "stop"); e != nil && err == nil {
				err = fmt.Errorf("it/nacos.sh stop: %w", e)
			}
		}()
	}

	bin, err := os.MkdirTemp("", "dubbogo-lb-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(bin)
	fmt.Println("building the sample provider and consumer...")
	for _, app := range []string{"provider", "consumer"} {
		cmd := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(bin, app), "./samples/"+app)
		cmd.Dir, cmd.Stdout, cmd.Stderr = root, os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("go build ./samples/%s: %w", app, err)
		}
	}

	var names []string
	for i, spec := range o.latencies {
		port, err := freePort()
		if err != nil {
			return err
		}
		name := providerName(i, spec)
		cmd := exec.Command(filepath.Join(bin, "provider"),
			"-conf", filepath.Join(root, "conf", "provider.yaml"), "-registry", o.nacosAddr,
			"-port", strconv.Itoa(port), "-name", name, "-latency", spec, "-weight", "100", "-warmup", "0s")
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if err := cmd.Start(); err != nil {
			return err
		}
		defer stopProcess(cmd)
		names = append(names, name)
	}
	if name, stop, err := startJavaProvider(ctx, root, o.nacosAddr); err != nil {
		return err
	} else if name != "" {
		defer stop()
		names = append(names, name)
	}
	// A JVM takes seconds to start, more on a busy machine.
	if err := waitRegistered(ctx, o.nacosAddr, len(names), 90*time.Second); err != nil {
		return err
	}
	fmt.Printf("\nproviders registered in Nacos %s: %s\n", o.nacosAddr, strings.Join(names, ", "))
	fmt.Printf("each balancer: one consumer process, %v of closed-loop load, %d calls in flight\n", o.duration, o.concurrency)
	if o.debug != "" {
		// Every consumer serves the page in turn, on one address.
		if o.debug, err = fixPort(o.debug); err != nil {
			return fmt.Errorf("-debug: %w", err)
		}
		printPage("http://" + o.debug + "/")
	}
	fmt.Println()

	var rows []load.Row
	for _, b := range o.balancers {
		total, err := runConsumer(ctx, root, bin, o, b, len(names))
		if err != nil {
			return fmt.Errorf("consumer with %s: %w", b, err)
		}
		fmt.Printf("  %-12s done: %d calls\n", b, total.Calls)
		rows = append(rows, load.Row{Label: b, Stats: total})
	}
	fmt.Println()
	load.WriteTable(os.Stdout, sortedNames(rows), rows)
	return nil
}

// runConsumer runs the sample consumer with balancer b, once all the
// providers have answered it, and returns its totals (its last JSON line).
func runConsumer(ctx context.Context, root, bin string, o options, b string, providers int) (callstats.Stats, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "consumer"),
		"-conf", filepath.Join(root, "conf", "consumer.yaml"), "-registry", o.nacosAddr,
		"-balancer", b, "-json", "-duration", o.duration.String(),
		"-concurrency", strconv.Itoa(o.concurrency), "-timeout", o.timeout.String(),
		"-providers", strconv.Itoa(providers), "-ready-timeout", "15s", "-debug", o.debug)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return callstats.Stats{}, fmt.Errorf("%w: %s", err, strings.TrimSpace(stderr.String()))
	}
	var total callstats.Stats
	found := false
	sc := bufio.NewScanner(&stdout)
	for sc.Scan() {
		var s callstats.Stats
		if json.Unmarshal(sc.Bytes(), &s) == nil && !s.Interval {
			total, found = s, true
		}
	}
	if !found {
		return total, errors.New("no totals in the consumer's output")
	}
	return total, nil
}

// fixPort returns addr with a free port in place of port 0.
func fixPort(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || port != "0" {
		return addr, err
	}
	p, err := freePort()
	return net.JoinHostPort(host, strconv.Itoa(p)), err
}

// moduleRoot finds the directory of this module's go.mod from the working
// directory up.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil &&
			bytes.Contains(b, []byte("module github.com/dubbogo-lb/lb\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("run the demo from inside the module (no go.mod of github.com/dubbogo-lb/lb found)")
		}
		dir = parent
	}
}

// script runs it/nacos.sh cmd.
func script(ctx context.Context, root, cmd string) error {
	c := exec.CommandContext(ctx, "bash", filepath.Join(root, "it", "nacos.sh"), cmd)
	c.Dir, c.Stdout, c.Stderr = root, os.Stdout, os.Stderr
	return c.Run()
}

// nacosUp reports whether Nacos's naming API answers on addr.
func nacosUp(ctx context.Context, addr string) bool {
	_, err := instances(ctx, addr)
	return err == nil
}

// instances returns the number of healthy instances of the greeter service,
// from the first Nacos of addr (host:port, or a cluster's
// host:port,host:port,...) that answers.
func instances(ctx context.Context, addr string) (int, error) {
	var errs []error
	for _, a := range strings.Split(addr, ",") {
		n, err := instancesAt(ctx, a)
		if err == nil {
			return n, nil
		}
		errs = append(errs, err)
	}
	return 0, errors.Join(errs...)
}

// instancesAt is instances for the Nacos node at addr.
func instancesAt(ctx context.Context, addr string) (int, error) {
	q := url.Values{"serviceName": {"providers:" + greeter.Interface + "::"}, "healthyOnly": {"true"}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/nacos/v1/ns/instance/list?"+q.Encode(), nil)
	if err != nil {
		return 0, err
	}
	c := http.Client{Timeout: 3 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("nacos: %s", resp.Status)
	}
	var body struct {
		Hosts []json.RawMessage `json:"hosts"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return 0, err
	}
	return len(body.Hosts), nil
}

// waitRegistered waits until at least n instances are registered.
func waitRegistered(ctx context.Context, addr string, n int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		got, err := instances(ctx, addr)
		if err == nil && got >= n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d providers registered in Nacos after %v (%v)", got, n, timeout, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// stopProcess stops a provider: SIGTERM, then SIGKILL after 5 s.
func stopProcess(cmd *exec.Cmd) {
	if cmd.Process == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}
