package app

import (
	"bytes"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dubbogo-lb/lb/loadbalance/describe"
)

// ServeDebug says nothing on loopback and one WARN line on every
// interface, where the page it returns is still reached, on loopback.
func TestServeDebugWarnsBeyondLoopback(t *testing.T) {
	var log bytes.Buffer
	old := debugLog
	debugLog = &log
	defer func() { debugLog = old }()

	for _, tc := range []struct {
		addr string
		warn bool
	}{{"127.0.0.1:0", false}, {"localhost:0", false}, {":0", true}, {"0.0.0.0:0", true}} {
		log.Reset()
		page, err := ServeDebug(tc.addr)
		require.NoError(t, err, tc.addr)
		lines := strings.Count(log.String(), "\n")
		if tc.warn {
			assert.Equal(t, 1, lines, "%s: %q", tc.addr, log.String())
			assert.True(t, strings.HasPrefix(log.String(), "WARN -debug "+tc.addr+" is not a loopback address"), log.String())
		} else {
			assert.Zero(t, lines, "%s: %q", tc.addr, log.String())
		}
		u, err := url.Parse(page)
		require.NoError(t, err)
		assert.True(t, describe.Loopback(u.Host), "%s: the page %s is on loopback", tc.addr, page)
		resp, err := http.Get(page + "lb.json")
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusOK, resp.StatusCode, page)
	}
}
