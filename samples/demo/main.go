// Command demo runs every balancer of the module in turn against the same
// three providers, which answer at different speeds, and prints a table
// side by side: each provider's share of the calls, the throughput and the
// latency percentiles.
//
//	go run ./samples/demo            # or: make demo
//
// By default everything runs in this one process and needs nothing but Go:
// three dubbo-go triple providers on loopback ports and a dubbo-go consumer
// that reaches them by direct URLs (no registry), with the lbactive filter
// and the failover cluster. dubbo-go's own random is run first, as the
// reference.
//
//	go run ./samples/demo -nacos     # or: make demo-nacos
//
// does the same through a real Nacos: it starts Nacos with it/nacos.sh
// (unless one already answers on 127.0.0.1:8848; that needs a JDK and
// Maven, see it/nacos.sh), builds and starts three sample provider
// processes that register in Nacos with their weight, timestamp and warmup,
// and a Dubbo Java provider when a JDK and Maven are here
// (it/javaprovider.sh), then runs the sample consumer once per balancer,
// and stops what it started.
//
// Either way the demo serves the live page of the balancers (package
// describe: each provider's share of the picks and its weight, every
// second) and prints its address; -debug chooses it, -hold keeps the page
// up after the table until Ctrl-C (in-process demo only).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"dubbo.apache.org/dubbo-go/v3/client"
	"dubbo.apache.org/dubbo-go/v3/global"
	"dubbo.apache.org/dubbo-go/v3/protocol"
	"dubbo.apache.org/dubbo-go/v3/server"
	"github.com/dubbogo/gost/log/logger"

	"github.com/dubbogo-lb/lb/extension"
	"github.com/dubbogo-lb/lb/filter"
	"github.com/dubbogo-lb/lb/samples/internal/app" // dubbo-go plugins, balancers, the live page
	"github.com/dubbogo-lb/lb/samples/internal/greeter"
	"github.com/dubbogo-lb/lb/samples/internal/load"
)

// options are the demo's flags.
type options struct {
	latencies   []string
	duration    time.Duration
	concurrency int
	timeout     time.Duration
	balancers   []string
	nacos       bool
	nacosAddr   string
	debug       string
	hold        bool
}

func main() {
	var o options
	lat := flag.String("latencies", "2ms,5ms,10ms", "comma-separated service times of the providers (see the provider's -latency)")
	bal := flag.String("balancers", "", "comma-separated balancers to run (default: dubbo-go's random, then every balancer of the module)")
	flag.DurationVar(&o.duration, "duration", 3*time.Second, "load phase per balancer")
	flag.IntVar(&o.concurrency, "concurrency", 16, "calls in flight")
	flag.DurationVar(&o.timeout, "timeout", 3*time.Second, "timeout of each call and of each attempt (dubbo-go's default)")
	flag.BoolVar(&o.nacos, "nacos", false, "run through a real Nacos with provider and consumer processes")
	flag.StringVar(&o.nacosAddr, "nacos-addr", "127.0.0.1:8848", "Nacos address for -nacos; a cluster's as a list, e.g. $(bash it/nacos.sh cluster addresses)")
	flag.StringVar(&o.debug, "debug", "127.0.0.1:0", `address of the live page of the balancers (port 0: a free one; "": no page)`)
	flag.BoolVar(&o.hold, "hold", false, "keep the live page up after the table, until Ctrl-C (not with -nacos)")
	child := flag.String("child-provider", "", "internal: serve one provider, name,port,latency")
	flag.Parse()
	if *child != "" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		err := childProvider(ctx, *child)
		stop()
		if err != nil {
			fmt.Fprintln(os.Stderr, "demo provider:", err)
			os.Exit(1)
		}
		return
	}
	o.latencies = splitList(*lat)
	o.balancers = splitList(*bal)
	if len(o.balancers) == 0 {
		o.balancers = append([]string{"random"}, extension.Balancers()...)
	}
	if err := o.check(); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	run := embedded
	if o.nacos {
		run = withNacos
	}
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		stop()
		os.Exit(1)
	}
}

func (o options) check() error {
	if len(o.latencies) == 0 {
		return fmt.Errorf("no -latencies")
	}
	for _, l := range o.latencies {
		if _, err := greeter.ParseLatency(l); err != nil {
			return err
		}
	}
	for _, b := range o.balancers {
		if err := extension.CheckBalancer(b); err != nil {
			return err
		}
	}
	if o.duration <= 0 || o.concurrency <= 0 || o.timeout <= 0 {
		return fmt.Errorf("-duration, -concurrency and -timeout must be positive")
	}
	return nil
}

func splitList(s string) []string {
	var out []string
	for f := range strings.SplitSeq(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// providerName names the provider with service time lat.
func providerName(i int, lat string) string {
	return "p" + strconv.Itoa(i+1) + "-" + strings.NewReplacer(":", "", "/", "±").Replace(lat)
}

// embedded runs the providers as child processes of this very binary (no
// build step, nothing to install) and the consumer in this process, over
// direct URLs on loopback.
//
// The providers are not goroutines of this process because dubbo-go keeps a
// process-wide table of exported services keyed by interface, group and
// version: a second provider of the same interface in one process fails
// with "service already defined".
func embedded(ctx context.Context, o options) error {
	logger.SetLoggerLevel("error") // dubbo-go's info logs would drown the table
	self, err := os.Executable()
	if err != nil {
		return err
	}
	var urls, names []string
	for i, spec := range o.latencies {
		port, err := freePort()
		if err != nil {
			return err
		}
		name := providerName(i, spec)
		cmd := exec.Command(self, "-child-provider", name+","+strconv.Itoa(port)+","+spec)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		// The child exits when this pipe closes, so it never outlives us.
		if _, err := cmd.StdinPipe(); err != nil {
			return err
		}
		if err := cmd.Start(); err != nil {
			return err
		}
		defer stopProcess(cmd)
		addr := "127.0.0.1:" + strconv.Itoa(port)
		if err := waitListening(ctx, addr, 20*time.Second); err != nil {
			return fmt.Errorf("provider %s: %w", name, err)
		}
		urls = append(urls, "tri://"+addr)
		names = append(names, name)
	}
	fmt.Printf("providers (child processes on loopback, direct URLs, no registry): %s\n", strings.Join(names, ", "))
	fmt.Printf("each balancer: %v of closed-loop load, %d calls in flight, failover cluster, lbactive filter\n", o.duration, o.concurrency)
	page := ""
	if o.debug != "" {
		if page, err = app.ServeDebug(o.debug); err != nil {
			return fmt.Errorf("-debug %s: %w", o.debug, err)
		}
		printPage(page)
	}
	fmt.Println()

	cli, err := client.NewClient()
	if err != nil {
		return err
	}
	var rows []load.Row
	for _, name := range o.balancers {
		g, err := greeter.NewGreeter(cli,
			client.WithURL(strings.Join(urls, ";")),
			client.WithLoadBalance(name),
			client.WithClusterFailOver(),
			client.WithRetries(2),
			client.WithRequestTimeout(o.timeout),
			client.WithFilter(filter.Name),
		)
		if err != nil {
			return fmt.Errorf("balancer %s: %w", name, err)
		}
		if _, err := load.WaitProviders(ctx, g, 1, 10*time.Second, o.timeout); err != nil {
			return fmt.Errorf("balancer %s: %w", name, err)
		}
		total, err := load.Run(ctx, g, load.Config{Concurrency: o.concurrency, Duration: o.duration, Timeout: o.timeout}, nil)
		if err != nil {
			return fmt.Errorf("balancer %s: %w", name, err)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		fmt.Printf("  %-12s done: %d calls\n", name, total.Calls)
		rows = append(rows, load.Row{Label: name, Stats: total})
	}
	fmt.Println()
	load.WriteTable(os.Stdout, names, rows)
	if o.hold && page != "" {
		fmt.Printf("\nthe live page stays up at %s until Ctrl-C\n", page)
		<-ctx.Done()
	}
	return nil
}

// printPage prints the address of the live page.
func printPage(url string) {
	fmt.Printf("live page of the balancers (share of the picks and weight of each provider, every second): %s\n", url)
}

// childProvider serves one provider, spec "name,port,latency", until its
// stdin closes (its parent is gone) or a signal arrives.
func childProvider(ctx context.Context, spec string) error {
	logger.SetLoggerLevel("error")
	parts := strings.SplitN(spec, ",", 3)
	if len(parts) != 3 {
		return fmt.Errorf("bad -child-provider %q", spec)
	}
	port, err := strconv.Atoi(parts[1])
	if err != nil {
		return err
	}
	lat, err := greeter.ParseLatency(parts[2])
	if err != nil {
		return err
	}
	b, err := greeter.NewBackend(parts[0], lat, 0)
	if err != nil {
		return err
	}
	app := global.DefaultApplicationConfig()
	app.Name = "dubbogo-lb-demo"
	app.MetadataType = "remote" // no metadata service: there is no registry
	srv, err := server.NewServer(server.SetServerApplication(app), server.WithServerProtocol(
		protocol.WithTriple(), protocol.WithIp("127.0.0.1"), protocol.WithPort(port)))
	if err != nil {
		return err
	}
	if err := greeter.Register(srv, b); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		cancel()
	}()
	if err := srv.ServeContext(ctx); err != nil && ctx.Err() == nil {
		return err
	}
	return nil
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// waitListening waits until addr accepts TCP connections.
func waitListening(ctx context.Context, addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			return c.Close()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not listening after %v: %w", addr, timeout, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// sortedNames returns the union of the providers of rows, sorted.
func sortedNames(rows []load.Row) []string {
	var names []string
	for _, r := range rows {
		for _, n := range r.Stats.Providers() {
			if !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	slices.Sort(names)
	return names
}
