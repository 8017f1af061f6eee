// Command provider is a sample dubbo-go triple provider of the greeter
// service that registers in Nacos with its weight, start timestamp and
// warmup period in its metadata, and simulates a service time, an error
// rate, and a spell of failing every call (-fail-at, -recover-at,
// -fail-code), which outlier ejection is for. It answers load reports
// (the lbload filter; -load-report, -capacity) and can be starved of CPU
// (-burn-cpu).
//
//	go run ./samples/provider -port 20001 -weight 100 -warmup 30s -latency 5ms
//	go run ./samples/provider -port 20002 -fail-at 30s -recover-at 60s
//
// The dubbo-go settings (registry, protocol, application) come from the
// YAML file -conf (default conf/provider.yaml); the flags below override
// it. On SIGINT or SIGTERM the provider exits at once; its Nacos instance
// is ephemeral and disappears with the connection.
//
// A registration keeper (extension.KeepRegistered) reads Nacos every
// -keep-interval (10s; 0: no keeper) and registers the provider again if
// its Nacos client lost the registration; -usr1-loses-registration makes
// SIGUSR1 lose it on purpose, for the tests; -usr2-fails makes SIGUSR2
// start a spell of failures, and the next SIGUSR2 end it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"net"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"dubbo.apache.org/dubbo-go/v3"
	"dubbo.apache.org/dubbo-go/v3/protocol/triple/triple_protocol"
	"dubbo.apache.org/dubbo-go/v3/server"

	"github.com/dubbogo-lb/lb/extension"
	"github.com/dubbogo-lb/lb/filter/providerload"
	"github.com/dubbogo-lb/lb/internal/urlparam"
	"github.com/dubbogo-lb/lb/samples/internal/app"
	"github.com/dubbogo-lb/lb/samples/internal/greeter"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "provider:", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		confPath = flag.String("conf", "conf/provider.yaml", "dubbo-go YAML configuration")
		port     = flag.Int("port", 0, "port of the triple protocol (0: the YAML's)")
		name     = flag.String("name", "", "name the provider answers with (default p<port>)")
		weight   = flag.Int64("weight", 100, "provider weight, exported as the weight URL parameter (> 0)")
		warm     = flag.Duration("warmup", 30*time.Second, "warmup period, whole seconds; 0 disables warmup")
		latency  = flag.String("latency", "1ms", "simulated service time: 5ms, exp:5ms, uniform:2ms-8ms or normal:5ms/1ms")
		errRate  = flag.Float64("error-rate", 0, "share of calls that fail, in [0, 1] (a plain error: biz_error at the consumer)")
		failAt   = flag.String("fail-at", "", "from then on fail every call at once: a duration after start (30s) or an RFC 3339 time; empty: never")
		recoAt   = flag.String("recover-at", "", "stop failing then (same forms as -fail-at); empty: never")
		failCode = flag.String("fail-code", "unavailable", "triple status of the failures of -fail-at: unavailable, internal, unknown, biz_error…")
		lbName   = flag.String("loadbalance", "", "the balancer this provider names for its consumers (the loadbalance URL parameter, which a consumer that names none uses); empty: none")
		report   = flag.Bool("load-report", true, "answer load reports (the lbload filter) to consumers that ask")
		capacity = flag.Int64("capacity", 0, "capacity in calls in flight that the load reports carry (0: none)")
		burn     = flag.Int("burn-cpu", 0, "goroutines that burn CPU for the whole run, starving the provider of CPU")
		keepIvl  = flag.Duration("keep-interval", extension.DefaultKeepInterval, "how often the registration keeper (extension.KeepRegistered) reads Nacos; 0: no keeper")
		usr2Fail = flag.Duration("usr2-fails", 0, "tests: on SIGUSR2, fail every call (with -fail-code) from then on for at most this long, until the next SIGUSR2; 0: SIGUSR2 does nothing")
		zone     = flag.String("zone", "", "the provider's zone: its lb.zone parameter, and its Nacos instance's cluster at application level (zone-aware routing)")
		params   app.Params
		hostileR = flag.String("hostile-load-report", "", "tests: answer every load report with this lb-load value, verbatim (a provider that lies), e.g. cpu:1e-99,cap:1e-99,qps:1e-99,eps:1e12")
		loseUSR1 = flag.Bool("usr1-loses-registration", false, "tests: on SIGUSR1, withdraw this provider's Nacos instances (interface and application level) through its own Nacos client, behind dubbo-go's back, as a registration the client lost")
	)
	var registry app.RegistryFlags
	registry.Register(flag.CommandLine)
	flag.Var(&params, "param", "a service URL parameter key=value the provider registers (repeatable), e.g. -param hash.nodes=80")
	start := time.Now()
	flag.Parse()
	if flag.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", flag.Args())
	}
	if *weight <= 0 {
		return fmt.Errorf("-weight %d: must be positive (drain a provider through the registry instead)", *weight)
	}
	if *keepIvl < 0 {
		return fmt.Errorf("-keep-interval %v: must not be negative", *keepIvl)
	}
	if *warm < 0 {
		return fmt.Errorf("-warmup %v: must not be negative", *warm)
	}
	if *capacity < 0 || *burn < 0 || *burn > 64 {
		return fmt.Errorf("-capacity %d, -burn-cpu %d: must be >= 0 (and at most 64 burners)", *capacity, *burn)
	}
	if *port < 0 || *port > 65535 {
		return fmt.Errorf("-port %d: out of range", *port)
	}
	lat, err := greeter.ParseLatency(*latency)
	if err != nil {
		return err
	}
	var failure greeter.Failure
	if failure.From, err = greeter.ParseWhen(*failAt, start); err != nil {
		return fmt.Errorf("-fail-at: %w", err)
	}
	if failure.Until, err = greeter.ParseWhen(*recoAt, start); err != nil {
		return fmt.Errorf("-recover-at: %w", err)
	}
	if failure.Code, err = greeter.ParseCode(*failCode); err != nil {
		return fmt.Errorf("-fail-code: %w", err)
	}
	if !failure.Until.IsZero() && !failure.Until.After(failure.From) {
		return fmt.Errorf("-recover-at %s: must come after -fail-at %s", *recoAt, *failAt)
	}
	k, err := app.ReadConfig(*confPath)
	if err != nil {
		return err
	}
	var listen string
	ins, err := app.NewInstance(k, func(o *dubbo.InstanceOptions) error {
		if len(o.Protocols) == 0 {
			return fmt.Errorf("%s: no dubbo.protocols", *confPath)
		}
		for _, p := range o.Protocols {
			if *port > 0 {
				p.Port = strconv.Itoa(*port)
			}
			listen = p.Ip + ":" + p.Port
		}
		registry.Apply(o.Registries)
		if *zone != "" {
			for _, r := range o.Registries {
				if r.Params == nil {
					r.Params = map[string]string{}
				}
				r.Params[urlparam.ZoneKey] = *zone // the instance's cluster, at application level
			}
		}
		if *report && o.Provider != nil {
			o.Provider.Filter = strings.Trim(o.Provider.Filter+","+extension.LoadFilterName, ",")
		}
		if *hostileR != "" && o.Provider != nil {
			registerHostileLoad(*hostileR)
			o.Provider.Filter = strings.Trim(hostileLoadName+","+o.Provider.Filter, ",")
		}
		// dubbo-go's own signal handling waits up to a minute before the
		// process exits; this one stops at once (below).
		if o.Shutdown != nil {
			o.Shutdown.InternalSignal = new(bool)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if *name == "" {
		_, p, _ := net.SplitHostPort(listen)
		*name = "p" + p
	}
	// dubbo-go registers the service even when the port cannot be bound
	// (it only logs the listen error), which would leave a provider in
	// Nacos that refuses every call: check first.
	if ln, err := net.Listen("tcp", listen); err != nil {
		return fmt.Errorf("cannot listen on %s: %w", listen, err)
	} else {
		_ = ln.Close()
	}
	backend, err := greeter.NewBackend(*name, lat, *errRate)
	if err != nil {
		return err
	}
	backend.FailDuring(failure)
	providerload.Default.SetCapacity(*capacity)
	for range *burn {
		go burnCPU()
	}
	provider := ins.GetInstanceOptionsSnapshot().Provider
	// The weight URL parameter is ProviderConfig.Weight, which no YAML key
	// reaches; dubbo-go exports 0 when it is unset.
	provider.Weight = *weight
	srv, err := ins.NewServer(server.SetServerProvider(provider))
	if err != nil {
		return err
	}
	// WithWarmUp exports whole seconds, the unit dubbo-go providers use for
	// both timestamp and warmup (package warmup reads them so).
	opts := []server.ServiceOption{server.WithWarmUp(*warm)}
	if *lbName != "" {
		opts = append(opts, server.WithLoadBalance(*lbName))
	}
	if *zone != "" {
		opts = append(opts, server.WithParam(urlparam.ZoneKey, *zone))
	}
	for _, k := range slices.Sorted(maps.Keys(params)) {
		opts = append(opts, server.WithParam(k, params[k]))
	}
	if err := greeter.Register(srv, backend, opts...); err != nil {
		return err
	}
	fmt.Printf("provider %s: serving %s on %s, weight %d, warmup %v, latency %v, error rate %g, load reports %v, capacity %d, CPU burners %d, zone %q\n",
		*name, greeter.Interface, listen, *weight, *warm, lat, *errRate, *report, *capacity, *burn, *zone)
	if !failure.From.IsZero() {
		printFailure(*name, failure)
	}
	// On SIGINT or SIGTERM the server stops serving and the process exits:
	// closing its Nacos connection removes the (ephemeral) instance at once.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The keeper registers the provider again if its Nacos client loses
	// the registration (seen after a Nacos restart).
	if *keepIvl > 0 {
		if err := extension.KeepRegistered(ctx, extension.KeepOptions{Interval: *keepIvl}); err != nil {
			return err
		}
	}
	if *usr2Fail > 0 {
		failOnUSR2(ctx, *name, backend, failure.Code, *usr2Fail)
	}
	if *loseUSR1 {
		loseRegistrationOnUSR1(ctx, listen, ins.GetInstanceOptionsSnapshot().Application.Name)
	}
	if err := srv.ServeContext(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	if *report {
		// The tests count, on this side, the calls that asked for a report
		// (a Dubbo Java adaptive consumer's, or our lbactive filter's).
		fmt.Printf("provider %s: answered %d load reports\n", *name, providerload.Default.Answered())
	}
	return nil
}

// burnCPU spins for ever, yielding now and then so that the Go scheduler
// still runs the handlers, slowly: a provider short of CPU.
func burnCPU() {
	x := uint64(1)
	for i := 0; ; i++ {
		x = x*6364136223846793005 + 1442695040888963407
		if i%(1<<16) == 0 {
			burnSink.Store(x)
			runtime.Gosched()
		}
	}
}

var burnSink atomic.Uint64

// printFailure says when the provider name fails every call (the tests
// read the times from this line).
func printFailure(name string, f greeter.Failure) {
	until := "never recovering"
	if !f.Until.IsZero() {
		until = "recovering at " + f.Until.Format(time.RFC3339Nano)
	}
	fmt.Printf("provider %s: failing every call with %v from %s, %s\n", name, f.Code, f.From.Format(time.RFC3339Nano), until)
}

// failOnUSR2 makes backend fail every call with code from a SIGUSR2 on, for
// at most spell: a failure that a test starts once its consumers have found
// the provider, however long that took. A SIGUSR2 during the spell ends it
// then ("recovered at"), so that a test can end it once it has seen what it
// waits for.
func failOnUSR2(ctx context.Context, name string, backend *greeter.Backend, code triple_protocol.Code, spell time.Duration) {
	var current greeter.Failure // only onSignal's goroutine touches it
	onSignal(ctx, syscall.SIGUSR2, func() {
		now := time.Now()
		if !current.From.IsZero() && now.Before(current.Until) {
			current.Until = now
			backend.FailDuring(current)
			fmt.Printf("provider %s: recovered at %s\n", name, now.Format(time.RFC3339Nano))
			return
		}
		current = greeter.Failure{From: now, Until: now.Add(spell), Code: code}
		backend.FailDuring(current)
		printFailure(name, current)
	})
}

// onSignal calls do on every sig, one at a time, until ctx ends.
func onSignal(ctx context.Context, sig os.Signal, do func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, sig)
	go func() {
		defer signal.Stop(ch)
		for {
			select {
			case <-ctx.Done():
				return
			case <-ch:
				do()
			}
		}
	}()
}
