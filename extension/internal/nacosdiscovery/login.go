package nacosdiscovery

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"dubbo.apache.org/dubbo-go/v3/common"
	"dubbo.apache.org/dubbo-go/v3/common/constant"
	"dubbo.apache.org/dubbo-go/v3/global"
)

// CheckLogin checks at start-up that the Nacos server of the registry reg
// lets this process in: it logs in with the registry's username and
// password, or, without a username, checks that the server serves readers
// without a login. It returns an error naming the server when the server
// requires a login and refuses the one configured (or none is), and nil
// when it takes it, needs none, or cannot be reached or asked in three
// rounds 1 s and 2 s apart (a consumer may start before its Nacos). dubbo-go itself only logs a refused login
// and then finds no provider, without saying why.
func CheckLogin(reg *global.RegistryConfig) error {
	u, err := nacosURL(reg)
	if err != nil {
		return err
	}
	servers, config, tc, err := nacosConfig(u)
	if err != nil {
		return fmt.Errorf("Nacos at %s: %w", reg.Address, err)
	}
	return newOpenAPI(servers, config, tc).checkLogins(time.Sleep)
}

// checkLoginWaits are the waits before the second and the third round of
// CheckLogin over the servers. A busy Nacos may not answer in time, or
// answer with a 5xx: seen at a load average of 60, a wrong password refused
// with 500 and the read that tells a login is required not answered, and
// the consumer started unchecked. A Nacos that is not there yet costs a
// consumer 3 s more at start.
var checkLoginWaits = []time.Duration{time.Second, 2 * time.Second}

// checkLogins is CheckLogin over a's servers, in rounds while no server
// decides, sleeping checkLoginWaits between them.
func (a *openAPI) checkLogins(sleep func(time.Duration)) error {
	for round := 0; ; round++ {
		for _, base := range a.bases {
			if decided, err := a.checkLogin(base); decided {
				return err
			}
		}
		if round == len(checkLoginWaits) {
			return nil
		}
		sleep(checkLoginWaits[round])
	}
}

// checkLogin checks the login at one server; decided is false when the
// server did not answer in a way that tells.
func (a *openAPI) checkLogin(base string) (decided bool, err error) {
	var loginErr error
	if a.username != "" {
		if _, loginErr = a.login(base); loginErr == nil {
			return true, nil
		}
		if status(loginErr) == 0 {
			return false, nil // no answer
		}
	}
	// A login refused, or none configured: does the server need one? Nacos
	// 3 answers a wrong password with 500, which alone does not tell.
	q := url.Values{"serviceName": {"dubbogo-lb-login-check"}}
	if a.namespace != "" {
		q.Set("namespaceId", a.namespace)
	}
	var body json.RawMessage
	readErr := a.get(base+"/v1/ns/instance/list?"+q.Encode(), "", &body)
	switch {
	case readErr == nil:
		return true, nil // no login needed: the credentials do not matter
	case !denied(readErr):
		return false, nil
	case loginErr != nil:
		code := status(loginErr)
		return true, fmt.Errorf("Nacos at %s: login as %q failed (%d %s), and the server requires a login: wrong username or password",
			base, a.username, code, http.StatusText(code))
	default:
		return true, fmt.Errorf("Nacos at %s requires a login (%d %s without one): set the registry's username and password",
			base, status(readErr), http.StatusText(status(readErr)))
	}
}

// nacosURL is the registry URL dubbo-go would give its Nacos client for
// reg, with the keys GetNacosConfig reads.
func nacosURL(reg *global.RegistryConfig) (*common.URL, error) {
	addr := reg.Address
	if strings.Contains(addr, "://") { // nacos://host:port, as dubbo-go accepts it
		u, err := url.Parse(addr)
		if err != nil {
			return nil, fmt.Errorf("registry address %q: %w", reg.Address, err)
		}
		addr = u.Host + u.Path
	}
	params := url.Values{}
	for k, v := range reg.Params {
		params.Set(k, v)
	}
	u, err := common.NewURL("registry://"+addr,
		common.WithParams(params),
		common.WithParamsValue(constant.NacosNamespaceID, reg.Namespace),
		common.WithParamsValue(constant.NacosUsername, reg.Username),
		common.WithParamsValue(constant.NacosPassword, reg.Password),
		common.WithParamsValue(constant.NacosTimeout, reg.Timeout),
		common.WithLocation(addr))
	if err != nil {
		return nil, fmt.Errorf("registry address %q: %w", reg.Address, err)
	}
	return u, nil
}
