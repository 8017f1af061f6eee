// Command consumer is a sample dubbo-go consumer of the greeter service.
// It takes its balancer from its YAML (dubbo.consumer.references.
// GreeterClient.loadbalance, or the -balancer flag), checks the name at
// start, drives a closed-loop load for a given duration with a given
// concurrency, and prints each provider's traffic share per interval and
// the latency percentiles.
//
//	go run ./samples/consumer -conf conf/consumer.yaml -balancer swrr -duration 20s
//
// With -json it prints one JSON object per interval and a final one with
// the totals (callstats.Stats), for scripts and the integration tests.
//
// What the balancers decide: -debug 127.0.0.1:PORT serves the live page
// (package describe) and prints its address on stderr; -metrics PORT turns
// on dubbo-go's metrics with its Prometheus endpoint on PORT, where the
// balancers' metrics appear beside dubbo-go's (package lbmetrics); -pause
// waits for SIGUSR1 before the run and, after it, for SIGINT or SIGTERM, so
// that a test reads the metrics while no call is in flight.
//
// Exit status: 0 after a run, 2 for a bad configuration (an unknown
// balancer among them: the message lists the valid names; and a Nacos that
// requires a login and refuses the one configured, or its absence: the
// message names the server), 1 for anything else.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"dubbo.apache.org/dubbo-go/v3"
	"dubbo.apache.org/dubbo-go/v3/global"

	"github.com/dubbogo-lb/lb/extension"
	"github.com/dubbogo-lb/lb/internal/callstats"
	"github.com/dubbogo-lb/lb/samples/internal/app"
	"github.com/dubbogo-lb/lb/samples/internal/greeter"
	"github.com/dubbogo-lb/lb/samples/internal/load"
)

// errConfig marks configuration errors (exit status 2).
var errConfig = errors.New("configuration")

func main() {
	err := run()
	switch {
	case err == nil:
	case errors.Is(err, errConfig):
		fmt.Fprintln(os.Stderr, "consumer:", err)
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "consumer:", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		confPath  = flag.String("conf", "conf/consumer.yaml", "dubbo-go YAML configuration")
		balancer  = flag.String("balancer", "", "balancer name, overriding references."+greeter.Reference+".loadbalance of the YAML; none: name no balancer, the providers' choice")
		direct    = flag.String("url", "", "direct provider URLs instead of the registry, e.g. tri://127.0.0.1:20001;tri://127.0.0.1:20002")
		list      = flag.Bool("list", false, "print the balancers this module registers and exit")
		providers = flag.Int("providers", 1, "wait until this many providers have answered before the run")
		ready     = flag.Duration("ready-timeout", 30*time.Second, "how long to wait for -providers")
		cfg       load.Config
		asJSON    = flag.Bool("json", false, "print JSON lines (callstats.Stats) instead of text")
		debug     = flag.String("debug", "", "serve the live page of the balancers on this address, e.g. 127.0.0.1:8080")
		metrics   = flag.Int("metrics", 0, "enable dubbo-go's metrics with its Prometheus endpoint on this port (0: the YAML's metrics section)")
		zone      = flag.String("zone", "", "the consumer's zone (the reference param lb.zone.local; default $DUBBOGO_LB_ZONE): zone-aware routing")
		callers   = flag.String("zone-callers", "", "the share of the calls each zone's consumers send, zone:share,... (the reference param lb.zone.callers)")
		params    app.Params
		pause     = flag.Bool("pause", false, "wait for SIGUSR1 before the run, and for SIGINT or SIGTERM after it")
	)
	flag.Var(&params, "param", "a reference param key=value, as the YAML's params (repeatable), e.g. -param lb.zone.min-cluster-size=2")
	flag.IntVar(&cfg.Concurrency, "concurrency", 8, "workers, each with one call in flight")
	flag.DurationVar(&cfg.Duration, "duration", 10*time.Second, "length of the run (0 with -calls: until -calls)")
	flag.Int64Var(&cfg.Calls, "calls", 0, "stop after this many calls (0: no limit)")
	flag.DurationVar(&cfg.Interval, "interval", time.Second, "reporting interval")
	flag.IntVar(&cfg.Keys, "keys", 1000, "distinct request keys sent in turn")
	flag.BoolVar(&cfg.TrackKeys, "track-keys", false, "report which providers answered each key")
	flag.Float64Var(&cfg.Rate, "rate", 0, "the most calls started per second, all workers together (0: no limit)")
	flag.DurationVar(&cfg.Timeout, "timeout", 3*time.Second, "timeout of each call (when given, also the reference's timeout, which bounds each attempt)")
	var registry app.RegistryFlags
	registry.Register(flag.CommandLine)
	flag.Parse()
	timeoutSet := false
	flag.Visit(func(f *flag.Flag) { timeoutSet = timeoutSet || f.Name == "timeout" })
	if flag.NArg() > 0 {
		return fmt.Errorf("%w: unexpected arguments %q", errConfig, flag.Args())
	}
	if *list {
		fmt.Println(strings.Join(extension.Balancers(), "\n"))
		return nil
	}

	k, err := app.ReadConfig(*confPath)
	if err != nil {
		return fmt.Errorf("%w: %w", errConfig, err)
	}
	refKey := "dubbo.consumer.references." + greeter.Reference
	if !k.Exists(refKey) {
		return fmt.Errorf("%w: %s has no %s", errConfig, *confPath, refKey)
	}
	name := k.String(refKey + ".loadbalance")
	switch *balancer {
	case "":
	case noBalancer: // the providers' choice, as dubbo-go's merge keeps it
		name = ""
	default:
		name = *balancer
	}
	ins, err := app.NewInstance(k, func(o *dubbo.InstanceOptions) error {
		ref := o.Consumer.References[greeter.Reference]
		if ref == nil {
			return fmt.Errorf("%w: %s has no %s", errConfig, *confPath, refKey)
		}
		ref.Loadbalance = name
		if timeoutSet {
			// dubbo-go bounds each attempt with the reference's timeout
			// (3 s unless the YAML says otherwise), whatever the caller's
			// context allows.
			ref.RequestTimeout = cfg.Timeout.String()
		}
		if *direct != "" {
			ref.URL = *direct
		}
		for key, v := range params {
			if ref.Params == nil {
				ref.Params = map[string]string{}
			}
			ref.Params[key] = v
		}
		for key, v := range map[string]string{"lb.zone.local": *zone, "lb.zone.callers": *callers} {
			if v != "" {
				if ref.Params == nil {
					ref.Params = map[string]string{}
				}
				ref.Params[key] = v
			}
		}
		registry.Apply(o.Registries)
		// registry-type all: one level serves each call, not both.
		extension.PreferApplicationLevel(o.Registries)
		// Every balancer name, per reference and per method: dubbo-go
		// itself would only notice an unknown one on the first call, with
		// a nil-pointer panic.
		if err := extension.CheckReferences(o.Consumer.References); err != nil {
			return fmt.Errorf("%w: %s: %w", errConfig, source(*balancer, *confPath), err)
		}
		// dubbo-go v3.3.2 would drop the per-method balancers of the
		// methods section when it dials.
		extension.MethodBalancersToParams(o.Consumer.References)
		// A Nacos that refuses the login: dubbo-go would only log it and
		// wait for providers that never come.
		if *direct == "" {
			if err := extension.CheckRegistries(o.Registries); err != nil {
				return fmt.Errorf("%w: %w", errConfig, err)
			}
		}
		if *metrics != 0 {
			if o.Metrics == nil {
				o.Metrics = global.DefaultMetricsConfig()
			}
			enableMetrics(o.Metrics, *metrics)
		}
		return nil
	})
	if err != nil {
		return err
	}
	cli, err := ins.NewClient()
	if err != nil {
		return err
	}
	g, err := greeter.NewConfiguredGreeter(cli)
	if err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	resume := make(chan os.Signal, 1)
	if *pause {
		signal.Notify(resume, syscall.SIGUSR1)
	}
	if *debug != "" {
		page, err := app.ServeDebug(*debug)
		if err != nil {
			return fmt.Errorf("%w: -debug %s: %w", errConfig, *debug, err)
		}
		fmt.Fprintln(os.Stderr, "live page of the balancers:", page)
	}
	out := json.NewEncoder(os.Stdout)
	seen, err := load.WaitProviders(ctx, g, *providers, *ready, cfg.Timeout)
	if err != nil {
		return err
	}
	if *pause {
		fmt.Fprintln(os.Stderr, pausedBefore)
		select {
		case <-resume:
		case <-ctx.Done():
			return nil
		}
		defer func() {
			fmt.Fprintln(os.Stderr, pausedAfter)
			<-ctx.Done()
		}()
	}
	if !*asJSON {
		fmt.Printf("balancer %s, providers %s, concurrency %d\n", orDefault(name), strings.Join(seen, " "), cfg.Concurrency)
	}
	names := seen
	total, err := load.Run(ctx, g, cfg, func(s callstats.Stats) {
		if *asJSON {
			s.Load, s.JavaLoad = app.ReportedLoad()
			_ = out.Encode(s)
			return
		}
		for _, n := range s.Providers() {
			if !slices.Contains(names, n) {
				names = append(names, n)
				slices.Sort(names)
			}
		}
		fmt.Println(load.FormatInterval(s, names))
	})
	if err != nil {
		return err
	}
	if *asJSON {
		total.Load, total.JavaLoad = app.ReportedLoad()
		return out.Encode(total)
	}
	fmt.Printf("\ntotal: %d calls in %.1fs, %d errors\n", total.Calls, total.Seconds, total.Errors)
	load.WriteTable(os.Stdout, total.Providers(), []load.Row{{Label: orDefault(name), Stats: total}})
	if total.LastError != "" {
		fmt.Println("an error:", total.LastError)
	}
	return nil
}

// What -pause prints on stderr when it waits.
const (
	pausedBefore = "paused before the run: SIGUSR1 starts it"
	pausedAfter  = "paused after the run: SIGINT or SIGTERM ends it"
)

// enableMetrics turns on dubbo-go's metrics with its Prometheus exporter on
// port, as the YAML would:
//
//	dubbo:
//	  metrics:
//	    enable: true
//	    port: PORT
//	    protocol: prometheus
//	    prometheus:
//	      exporter:
//	        enabled: true
func enableMetrics(m *global.MetricsConfig, port int) {
	on := true
	m.Enable = &on
	m.Port = strconv.Itoa(port)
	m.Protocol = "prometheus"
	if m.Prometheus == nil {
		m.Prometheus = &global.PrometheusConfig{}
	}
	if m.Prometheus.Exporter == nil {
		m.Prometheus.Exporter = &global.Exporter{}
	}
	m.Prometheus.Exporter.Enabled = &on
}

// noBalancer is the -balancer value that names no balancer: the consumer
// then uses the one its providers name (dubbo-go's default, random, when
// they name none), as a consumer whose YAML names none.
const noBalancer = "none"

// source says where the balancer names come from.
func source(balancerFlag, path string) string {
	if balancerFlag != "" {
		return path + " with -balancer " + balancerFlag
	}
	return path
}

func orDefault(name string) string {
	if name == "" {
		return "(dubbo-go default: random)"
	}
	return name
}
