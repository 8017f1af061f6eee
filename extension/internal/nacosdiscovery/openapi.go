package nacosdiscovery

import (
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
// has credentials, and tries the servers in turn.
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

func newOpenAPI(servers []nacosconst.ServerConfig, c nacosconst.ClientConfig) *openAPI {
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
	if a.username != "" {
		token, err := a.login(base)
		if err != nil {
			return nil, err
		}
		q.Set("accessToken", token)
	}
	var body json.RawMessage
	if err := a.get(base+"/v1/ns/instance/list?"+q.Encode(), &body); err != nil {
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
	resp, err := a.http.PostForm(base+"/v1/auth/login", form)
	if err != nil {
		return "", err
	}
	var out struct {
		AccessToken string `json:"accessToken"`
		TokenTTL    int64  `json:"tokenTtl"` // seconds
	}
	if err := decode(resp, &out); err != nil {
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

func (a *openAPI) get(u string, out any) error {
	resp, err := a.http.Get(u)
	if err != nil {
		return err
	}
	return decode(resp, out)
}

// decode reads a JSON answer into out; an HTTP error status is an error
// that carries the start of the body.
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
		return fmt.Errorf("%s: %s", resp.Status, msg)
	}
	return json.Unmarshal(body, out)
}
