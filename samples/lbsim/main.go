// Command lbsim runs load balancers side by side in simulated scenarios and
// shows how each spreads traffic over providers that differ in latency and
// capacity, change over time or join late:
//
//	go run ./samples/lbsim -scenario brpc -out lbsim-out
//
// Every balancer runs through the real lbactive filter and rpcstatus store,
// on a virtual clock (package sim, on the engine of internal/assembly/simulate),
// so a run of tens of simulated seconds takes a few real seconds and does
// not depend on the machine's load. For each scenario it prints per-second tables (each provider's
// share of the calls, throughput, mean and p99 latency) and a summary, and
// writes them to DIR/NAME.txt with a figure, DIR/NAME.png: traffic share
// over time per provider for each balancer, then throughput and latency of
// all balancers.
//
// Flags:
//
//	-scenario  brpc, capacity, slowdown, join, failfast, hang or all (default
//	           all); in failfast and hang one provider fails for a while, and
//	           each of this module's balancers runs with outlier ejection
//	           off and on, with a table of the failed first attempts; fleet
//	           (512 providers, not in all) weighs fewestactive's two choices
//	           against fewestactive-scan; subsets (not in all) runs brpc's
//	           experiment and the capacity scenario on 12 providers and 16
//	           consumers over the full set, aperture and rendezvous subsets
//	           of 4 (brpc-wide, capacity-wide and their -aperture and
//	           -rendezvous versions), and compares them in a table
//	-balancers comma-separated names (default: those of sim.DefaultBalancers
//	           that are registered)
//	-out       output directory (default lbsim-out)
//	-duration  simulated time; the scenario's script is stretched or
//	           shrunk to it (default: the scenario's own)
//	-seed      seed of the simulator's randomness (default 1)
//	-bucket    width of the tables' time buckets (default 1s)
//	-format    png or svg (default png)
//	-parallel  balancers simulated at once (default 2)
//	-quiet     print only the summaries
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/dubbogo/gost/log/logger"

	_ "github.com/dubbogo-lb/lb/extension"
	"github.com/dubbogo-lb/lb/samples/lbsim/sim"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "lbsim:", err)
		os.Exit(2)
	}
}

// config is what the flags say.
type config struct {
	scenarios []sim.Scenario
	balancers []string
	out       string
	duration  time.Duration
	seed      uint64
	bucket    time.Duration
	format    string
	parallel  int
	quiet     bool
}

func parse(args []string, stderr io.Writer) (*config, error) {
	fs := flag.NewFlagSet("lbsim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	scenario := fs.String("scenario", "all", "scenario: brpc, capacity, slowdown, join, failfast, hang, tianchi, tianchi1 or all; fleet by name")
	balancers := fs.String("balancers", "", "comma-separated balancer names (default: the registered ones of "+strings.Join(sim.DefaultBalancers, ",")+")")
	c := &config{}
	fs.StringVar(&c.out, "out", "lbsim-out", "output directory for tables and plots")
	fs.DurationVar(&c.duration, "duration", 0, "simulated time, stretching the scenario's script (default: the scenario's own)")
	fs.Uint64Var(&c.seed, "seed", 1, "seed of the simulator's randomness")
	fs.DurationVar(&c.bucket, "bucket", sim.DefaultBucket, "width of the time buckets of the tables")
	fs.StringVar(&c.format, "format", "png", "plot format: png or svg")
	fs.IntVar(&c.parallel, "parallel", min(2, runtime.GOMAXPROCS(0)), "balancers simulated at once")
	fs.BoolVar(&c.quiet, "quiet", false, "print only the summaries")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *scenario == "all" {
		c.scenarios = sim.Scenarios()
	} else {
		for _, name := range strings.Split(*scenario, ",") {
			if name = strings.TrimSpace(name); name == "subsets" {
				for _, trio := range sim.SubsetComparisons() {
					c.scenarios = append(c.scenarios, trio[:]...)
				}
				continue
			}
			s, err := sim.Lookup(name)
			if err != nil {
				return nil, err
			}
			c.scenarios = append(c.scenarios, s)
		}
	}
	if *balancers == "" {
		have, missing := sim.Available()
		if len(missing) > 0 {
			fmt.Fprintf(stderr, "lbsim: not registered, skipped: %s\n", strings.Join(missing, ", "))
		}
		c.balancers = have
	} else {
		for _, b := range strings.Split(*balancers, ",") {
			if b = strings.TrimSpace(b); b != "" {
				c.balancers = append(c.balancers, b)
			}
		}
	}
	if len(c.balancers) == 0 {
		return nil, errors.New("no balancer to run")
	}
	if c.bucket <= 0 {
		return nil, fmt.Errorf("-bucket %v: must be > 0", c.bucket)
	}
	if c.duration < 0 {
		return nil, fmt.Errorf("-duration %v: must be > 0", c.duration)
	}
	if c.format != "png" && c.format != "svg" {
		return nil, fmt.Errorf("-format %q: must be png or svg", c.format)
	}
	c.parallel = max(c.parallel, 1)
	return c, nil
}

func run(args []string, stdout io.Writer) error {
	c, err := parse(args, os.Stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	// The balancers log membership problems; the simulation's own output
	// is what matters here.
	logger.SetLoggerLevel("error")
	if err := os.MkdirAll(c.out, 0o755); err != nil {
		return err
	}
	ran := map[string][]*sim.Result{}
	for _, sc := range c.scenarios {
		if c.duration > 0 {
			sc = sc.Scale(float64(c.duration) / float64(sc.Duration))
		}
		results, err := runScenario(c, sc, stdout)
		if err != nil {
			return err
		}
		ran[sc.Name] = results
	}
	return compareSubsets(c, ran, stdout)
}

// compareSubsets writes the table of sim.WriteSubsets for each trio of
// sim.SubsetComparisons whose three scenarios ran, to stdout and to
// DIR/NAME-subsets.txt.
func compareSubsets(c *config, ran map[string][]*sim.Result, stdout io.Writer) error {
	for _, trio := range sim.SubsetComparisons() {
		var scs []*sim.Scenario
		var results [][]*sim.Result
		for _, sc := range trio {
			if c.duration > 0 {
				sc = sc.Scale(float64(c.duration) / float64(sc.Duration))
			}
			if ran[sc.Name] == nil {
				break
			}
			scs, results = append(scs, &sc), append(results, ran[sc.Name])
		}
		if len(scs) < len(trio) {
			continue
		}
		var out bytes.Buffer
		fmt.Fprintf(&out, "== %s: the balancers over the full set and over subsets (%v simulated, seed %d)\n", trio[0].Name, scs[0].Duration, c.seed)
		if err := sim.WriteSubsets(&out, scs, results); err != nil {
			return err
		}
		out.WriteString("\n")
		if err := os.WriteFile(filepath.Join(c.out, trio[0].Name+"-subsets.txt"), out.Bytes(), 0o644); err != nil {
			return err
		}
		if _, err := stdout.Write(out.Bytes()); err != nil {
			return err
		}
	}
	return nil
}

// runScenario simulates sc with every balancer, prints and writes the
// tables and the figure, and returns the results.
func runScenario(c *config, sc sim.Scenario, stdout io.Writer) ([]*sim.Result, error) {
	start := time.Now()
	results, err := simulate(sc, runsOf(sc, c.balancers, sim.Options{Seed: c.seed, Bucket: c.bucket}), c.parallel)
	if err != nil {
		return nil, err
	}
	var text bytes.Buffer
	fmt.Fprintf(&text, "== %s: %s (%d callers, %v simulated)\n\n", sc.Name, sc.Title, sc.Callers, sc.Duration)
	var tables bytes.Buffer
	for _, r := range results {
		fmt.Fprintf(&tables, "-- %s / %s: share of calls per provider, per second\n", sc.Name, r.Label())
		if err := r.WriteTable(&tables); err != nil {
			return nil, err
		}
		tables.WriteString("\n")
	}
	var summary bytes.Buffer
	fmt.Fprintf(&summary, "-- %s: summary\n", sc.Name)
	if err := sim.WriteSummary(&summary, results); err != nil {
		return nil, err
	}
	if sc.Bound() > 0 {
		fmt.Fprintf(&summary, "\n-- %s: ", sc.Name)
		if err := sim.WriteCapacity(&summary, &sc, results); err != nil {
			return nil, err
		}
	}
	if sc.Failure != nil {
		fmt.Fprintf(&summary, "\n-- %s: ", sc.Name)
		if err := sim.WriteFailures(&summary, &sc, results); err != nil {
			return nil, err
		}
	}
	if sc.Zones != nil {
		fmt.Fprintf(&summary, "\n-- %s: ", sc.Name)
		if err := sim.WriteZones(&summary, &sc, results); err != nil {
			return nil, err
		}
	}
	plotPath := filepath.Join(c.out, sc.Name+"."+c.format)
	if err := writePlot(plotPath, sc, results); err != nil {
		return nil, fmt.Errorf("plot %s: %w", plotPath, err)
	}
	fmt.Fprintf(&summary, "plot: %s (simulated in %v)\n\n", plotPath, time.Since(start).Round(time.Millisecond))

	full := text.String() + tables.String() + summary.String()
	if err := os.WriteFile(filepath.Join(c.out, sc.Name+".txt"), []byte(full), 0o644); err != nil {
		return nil, err
	}
	if c.quiet {
		_, err = io.WriteString(stdout, text.String()+summary.String())
	} else {
		_, err = io.WriteString(stdout, full)
	}
	return results, err
}

// simRun is one simulation of a scenario: a balancer and its options.
type simRun struct {
	balancer string
	opts     sim.Options
}

// runsOf lists the runs of sc: each balancer once, and where sc has a
// failure spell each of this module's balancers first with outlier
// ejection off, then on.
func runsOf(sc sim.Scenario, balancers []string, opts sim.Options) []simRun {
	var runs []simRun
	for _, name := range balancers {
		if sc.Failure != nil && sim.Ours(name) {
			off := opts
			off.EjectionOff = true
			runs = append(runs, simRun{name, off})
		}
		runs = append(runs, simRun{name, opts})
	}
	return runs
}

// simulate runs sc as each of runs says, up to parallel at once, and
// returns the results in the order of runs.
func simulate(sc sim.Scenario, runs []simRun, parallel int) ([]*sim.Result, error) {
	results := make([]*sim.Result, len(runs))
	errs := make([]error, len(runs))
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for i, r := range runs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			results[i], errs[i] = sim.Run(sc, r.balancer, r.opts)
		}()
	}
	wg.Wait()
	return results, errors.Join(errs...)
}
