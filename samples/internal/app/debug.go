package app

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/dubbogo-lb/lb/loadbalance/describe"
)

// debugLog is where ServeDebug writes, the samples' standard error.
var debugLog io.Writer = os.Stderr

// ServeDebug serves the live page of the module's balancers
// (describe.Default's handler: the page at /, its JSON at /lb.json) on
// addr, host:port, port 0 for a free one, in the background, and returns
// the page's URL (on loopback when addr is every interface). Keep addr on
// loopback: the page shows the providers. On any other address (":8080"
// is every interface) it says so in one WARN line on standard error; the
// page then answers requests naming the host of addr too (the name or
// address given, and the address it resolved to), besides the loopback
// names, and 403 to any other Host (see describe.HandlerOptions).
func ServeDebug(addr string) (string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", err
	}
	bound := ln.Addr().(*net.TCPAddr)
	page := ln.Addr().String()
	var opts describe.HandlerOptions
	if !describe.Loopback(addr) {
		host, _, _ := net.SplitHostPort(addr)
		if ip := net.ParseIP(host); host != "" && (ip == nil || !ip.IsUnspecified()) {
			opts.AllowedHosts = append(opts.AllowedHosts, host)
		}
		if bound.IP.IsUnspecified() {
			page = net.JoinHostPort(loopbackOf(bound.IP), strconv.Itoa(bound.Port))
		} else if !bound.IP.IsLoopback() {
			opts.AllowedHosts = append(opts.AllowedHosts, bound.IP.String())
		}
		fmt.Fprintf(debugLog, "WARN -debug %s is not a loopback address: whoever reaches it can read the live page, every provider's address and figures included (browsers only under the Host names localhost, 127.0.0.1, [::1]%s); use 127.0.0.1:PORT unless that is meant\n",
			addr, hostNote(opts.AllowedHosts))
	}
	srv := &http.Server{Handler: describe.Default.HandlerWith(opts), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintln(os.Stderr, "live page:", err)
		}
	}()
	return "http://" + page + "/", nil
}

// loopbackOf returns the loopback address of the family of ip, an
// unspecified address: 127.0.0.1, or ::1 for IPv6 (which a dual-stack
// listener also accepts).
func loopbackOf(ip net.IP) string {
	if ip.To4() != nil {
		return "127.0.0.1"
	}
	return "::1"
}

// hostNote names the allowed hosts for the WARN line of ServeDebug.
func hostNote(hosts []string) string {
	if len(hosts) == 0 {
		return ""
	}
	return ", " + strings.Join(hosts, ", ")
}
