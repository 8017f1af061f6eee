package nacosdiscovery

import (
	"errors"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	nacosconst "github.com/nacos-group/nacos-sdk-go/v2/common/constant"
	"github.com/nacos-group/nacos-sdk-go/v2/model"

	"github.com/dubbogo-lb/lb/internal/lblog"
)

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"":                            "",
		"no secret here":              "no secret here",
		"GET /list?accessToken=eyJ.x": "GET /list?accessToken=REDACTED",
		`Get "http://h:1/nacos/v1/ns/instance/list?accessToken=abc&serviceName=s": dial tcp`: `Get "http://h:1/nacos/v1/ns/instance/list?accessToken=REDACTED&serviceName=s": dial tcp`,
		"username=u&password=p%40ss+word&x=1":                                                "username=u&password=REDACTED&x=1",
		"AccessToken=a PASSWORD=b":                                                           "AccessToken=REDACTED PASSWORD=REDACTED",
		`{"accessToken":"eyJhb\"GciOi","tokenTtl":18000}`:                                    `{"accessToken":"REDACTED","tokenTtl":18000}`,
		`{"password" : "hunter2", "username":"nacos"}`:                                       `{"password" : "REDACTED", "username":"nacos"}`,
		"accessToken=": "accessToken=REDACTED",
	} {
		if got := redact(in); got != want {
			t.Errorf("redact(%q) = %q, want %q", in, got, want)
		}
		if got := redact(redact(in)); got != want {
			t.Errorf("redact twice (%q) = %q, want %q", in, got, want)
		}
	}
}

// A *url.Error (what a failed request returns) loses the secret of its URL,
// in its message and in what errors.As finds; other errors keep their type
// unless their message holds a secret.
func TestRedactErr(t *testing.T) {
	if redactErr(nil) != nil {
		t.Error("redactErr(nil) is not nil")
	}
	ue := &url.Error{Op: "Get", URL: "http://127.0.0.1:1/list?accessToken=s3cr3t-token", Err: errors.New("connection refused")}
	err := redactErr(ue)
	var got *url.Error
	if !errors.As(err, &got) || strings.Contains(err.Error(), "s3cr3t") || strings.Contains(got.URL, "s3cr3t") {
		t.Errorf("redactErr(%v) = %v (URL %v)", ue, err, got)
	}
	if ue.URL != "http://127.0.0.1:1/list?accessToken=s3cr3t-token" {
		t.Errorf("redactErr changed the error it was given: %v", ue.URL)
	}
	he := &httpError{code: 403, body: "denied"}
	if err := redactErr(he); status(err) != 403 {
		t.Errorf("redactErr(%v) lost the status: %v", he, err)
	}
	wrapped := redactErr(errors.Join(errors.New("read"), ue))
	if strings.Contains(wrapped.Error(), "s3cr3t") {
		t.Errorf("a wrapped *url.Error keeps the secret: %v", wrapped)
	}
	var inner *url.Error
	if errors.As(wrapped, &inner) {
		t.Errorf("a redacted error unwraps to the *url.Error with the secret: %v", inner.URL)
	}
}

// closedPort returns the address of a port that nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// A resync read with a token and a password, against a port that refuses
// the connection: neither the errors nor the WARN lines show the token or
// the password. The token travels in a header, never in a URL.
func TestTransportErrorShowsNoSecret(t *testing.T) {
	const token, password = "tok-9f2c7e51-secret", "pw-0d8a1b-secret"
	var mu sync.Mutex
	var lines []string
	logged := make(chan struct{}, 1)
	t.Cleanup(lblog.Capture(func(line string) {
		mu.Lock()
		lines = append(lines, line)
		mu.Unlock()
		select {
		case logged <- struct{}{}:
		default:
		}
	}))
	host, port, _ := net.SplitHostPort(closedPort(t))
	a := newOpenAPI([]nacosconst.ServerConfig{{IpAddr: host, Port: mustPort(t, port)}},
		nacosconst.ClientConfig{Username: "nacos", Password: password, TimeoutMs: 5000}, nil)
	var sent []string
	a.http.Transport = roundTripper(func(r *http.Request) (*http.Response, error) {
		mu.Lock()
		sent = append(sent, r.URL.String())
		mu.Unlock()
		return http.DefaultTransport.RoundTrip(r)
	})

	// A login refused by the closed port, then a read with a valid token.
	if _, err := a.instances(service, "G"); err == nil || strings.Contains(err.Error(), password) {
		t.Fatalf("the login against a closed port: %v", err)
	}
	a.mu.Lock()
	a.token, a.expires = token, time.Now().Add(time.Hour)
	a.mu.Unlock()
	_, err := a.instances(service, "G")
	if err == nil {
		t.Fatal("a read against a closed port succeeded")
	}
	if strings.Contains(err.Error(), token) || strings.Contains(err.Error(), password) {
		t.Errorf("the error shows a secret: %v", err)
	}
	var ue *url.Error
	if errors.As(err, &ue) && strings.Contains(ue.URL, token) {
		t.Errorf("the *url.Error inside shows the token: %v", ue.URL)
	}

	// Through a feed's resync, which logs the failed read.
	src := &source{key: "closed", sdk: &fakeClient{}, api: a, refs: 1, feeds: map[string]*feed{}}
	o := Options{Confirm: 10 * time.Millisecond, Resync: 20 * time.Millisecond}.withDefaults()
	sub := &subscription{src: src, listener: newRecorder(), opts: o, wake: make(chan struct{}, 1), done: make(chan struct{})}
	sub.feed = src.watch(service, "G", sub, o)
	sub.feed.onPush([]model.Instance{instance(1, true, true)}, nil)
	sub.subscribe()
	defer sub.close()
	select {
	case <-logged:
	case <-time.After(30 * time.Second):
		t.Fatal("no WARN line for the failed resync read within 30 s")
	}
	mu.Lock()
	defer mu.Unlock()
	for _, l := range lines {
		if strings.Contains(l, token) || strings.Contains(l, password) {
			t.Errorf("a log line shows a secret: %s", l)
		}
	}
	for _, u := range sent {
		if strings.Contains(u, token) || strings.Contains(u, password) {
			t.Errorf("a request URL carries a secret: %s", u)
		}
	}
	t.Logf("%d lines, the first: %s", len(lines), lines[0])
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func mustPort(t *testing.T, s string) uint64 {
	t.Helper()
	p, err := strconv.ParseUint(s, 10, 16)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
