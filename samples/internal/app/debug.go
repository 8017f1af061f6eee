package app

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/dubbogo-lb/lb/loadbalance/describe"
)

// ServeDebug serves the live page of the module's balancers
// (describe.Default.Handler: the page at /, its JSON at /lb.json) on addr,
// host:port, port 0 for a free one, in the background, and returns the
// page's URL. Keep addr on loopback: the page shows the providers.
func ServeDebug(addr string) (string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", err
	}
	srv := &http.Server{Handler: describe.Default.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintln(os.Stderr, "live page:", err)
		}
	}()
	return "http://" + ln.Addr().String() + "/", nil
}
