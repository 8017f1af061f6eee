package nacosdiscovery

import (
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	nacosconst "github.com/nacos-group/nacos-sdk-go/v2/common/constant"
	"github.com/nacos-group/nacos-sdk-go/v2/model"
)

// openAPI reads the instances of a service straight from the Nacos server
// through its HTTP Open API (GET /v1/ns/instance/list, what the console
// reads), bypassing the Nacos client and its cache: the authority that a
// resync compares the pushed list with. It logs in first when the registry
// has credentials (POST /v3/auth/user/login, or /v1/auth/login on a Nacos
// 2 without the v3 API, as the Nacos Java client does), sends the token in
// the accessToken header (never in a URL), and tries the servers in turn.
// No error it returns holds the token or the password (redactErr).
type openAPI struct {
	bases     []string // scheme://host:port/context, one per server
	namespace string
	username  string
	password  string
	http      *http.Client

	mu      sync.Mutex
	token   string
	expires time.Time
}

// newOpenAPI returns the Open API client of servers, with the namespace,
// login and timeout of c; over TLS with tc when tc is not nil (the servers'
// scheme is then https: nacosConfig).
func newOpenAPI(servers []nacosconst.ServerConfig, c nacosconst.ClientConfig, tc *tls.Config) *openAPI {
	a := &openAPI{namespace: c.NamespaceId, username: c.Username, password: c.Password}
	for _, s := range servers {
		scheme := s.Scheme
		if scheme == "" {
			scheme = "http"
		}
		ctx := "/" + strings.Trim(s.ContextPath, "/")
		if ctx == "/" {
			ctx = "/nacos"
		}
		a.bases = append(a.bases, scheme+"://"+net.JoinHostPort(s.IpAddr, strconv.FormatUint(s.Port, 10))+ctx)
	}
	timeout := time.Duration(c.TimeoutMs) * time.Millisecond
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	a.http = &http.Client{Timeout: timeout}
	if tc != nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.TLSClientConfig = tc
		a.http.Transport = tr
	}
	return a
}

// instances returns every instance of service in group (healthy or not,
// enabled or not), as the server has them now.
func (a *openAPI) instances(service, group string) ([]model.Instance, error) {
	if len(a.bases) == 0 {
		return nil, errors.New("no Nacos server configured")
	}
	var errs []error
	for _, base := range a.bases {
		list, err := a.instancesAt(base, service, group)
		if err == nil {
			return list, nil
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

func (a *openAPI) instancesAt(base, service, group string) ([]model.Instance, error) {
	q := url.Values{"serviceName": {service}, "groupName": {group}, "healthyOnly": {"false"}}
	if a.namespace != "" {
		q.Set("namespaceId", a.namespace)
	}
	token := ""
	if a.username != "" {
		var err error
		if token, err = a.login(base); err != nil {
			return nil, err
		}
	}
	var body json.RawMessage
	if err := a.get(base+"/v1/ns/instance/list?"+q.Encode(), token, &body); err != nil {
		if denied(err) && token != "" {
			// The token no longer counts (the user's password was changed,
			// or Nacos restarted with another secret key): log in again on
			// the next read instead of using it until it expires.
			a.forget(token)
		}
		return nil, err
	}
	return parseInstanceList(body)
}

// parseInstanceList reads the instances of an instance-list answer; a
// list without hosts is empty, not nil.
func parseInstanceList(body []byte) ([]model.Instance, error) {
	var out struct {
		Hosts []model.Instance `json:"hosts"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		return nil, fmt.Errorf("instance list: %w", err)
	}
	if out.Hosts == nil {
		out.Hosts = []model.Instance{}
	}
	return out.Hosts, nil
}

// login returns an access token for base, logging in when the last one is
// missing or near its end.
func (a *openAPI) login(base string) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.token != "" && time.Now().Before(a.expires) {
		return a.token, nil
	}
	form := url.Values{"username": {a.username}, "password": {a.password}}
	var out struct {
		AccessToken string `json:"accessToken"`
		TokenTTL    int64  `json:"tokenTtl"` // seconds
	}
	err := a.post(base+"/v3/auth/user/login", form, &out)
	if status(err) == http.StatusNotFound || status(err) == http.StatusNotImplemented {
		err = a.post(base+"/v1/auth/login", form, &out) // Nacos 2
	}
	if err != nil {
		return "", fmt.Errorf("login as %q: %w", a.username, err)
	}
	if out.AccessToken == "" {
		return "", fmt.Errorf("login as %q: no access token in the answer", a.username)
	}
	a.token = out.AccessToken
	// Renew at 90 % of the token's life.
	a.expires = time.Now().Add(time.Duration(out.TokenTTL) * time.Second * 9 / 10)
	return a.token, nil
}

// forget drops token, if it is still the one in use, so that the next read
// logs in again.
func (a *openAPI) forget(token string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.token == token {
		a.token = ""
	}
}

// tokenHeader is the request header that carries the access token: Nacos
// reads it as it reads the accessToken parameter (checked against Nacos
// 3.1.0), and a header stays out of URLs, hence out of *url.Error messages
// and of access logs.
const tokenHeader = "accessToken"

// get reads the JSON answer of u into out, sending token (if not empty) in
// tokenHeader. Its error holds no secret.
func (a *openAPI) get(u, token string, out any) error {
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		return redactErr(err)
	}
	if token != "" {
		req.Header.Set(tokenHeader, token)
	}
	resp, err := a.http.Do(req)
	if err != nil {
		return redactErr(err)
	}
	return redactErr(decode(resp, out))
}

// post posts form to u and reads the JSON answer into out. Its error holds
// no secret.
func (a *openAPI) post(u string, form url.Values, out any) error {
	resp, err := a.http.PostForm(u, form)
	if err != nil {
		return redactErr(err)
	}
	return redactErr(decode(resp, out))
}

// httpError is an answer of the server with an error status.
type httpError struct {
	code int
	body string // its start
}

func (e *httpError) Error() string {
	msg := fmt.Sprintf("%d %s", e.code, http.StatusText(e.code))
	if e.body != "" {
		msg += ": " + e.body
	}
	return msg
}

// status returns the HTTP status of the server's answer that err is, or 0
// when err is not one (nil, or no answer).
func status(err error) int {
	var he *httpError
	if errors.As(err, &he) {
		return he.code
	}
	return 0
}

// denied reports whether err is the server refusing a request for want of
// a valid login.
func denied(err error) bool {
	code := status(err)
	return code == http.StatusUnauthorized || code == http.StatusForbidden
}

// decode reads a JSON answer into out; an HTTP error status is an
// *httpError that carries the start of the body.
func decode(resp *http.Response, out any) error {
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		msg := strings.TrimSpace(string(body))
		if len(msg) > 200 {
			msg = msg[:200]
		}
		return &httpError{code: resp.StatusCode, body: redact(msg)}
	}
	return json.Unmarshal(body, out)
}
