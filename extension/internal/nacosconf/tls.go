package nacosconf

import (
	"fmt"
	"strconv"

	"dubbo.apache.org/dubbo-go/v3/common"
)

// The registry parameters that put this module's own Nacos clients on TLS
// (the consumer's Nacos client and the Open API reads of the resync, the
// login check and the registration keeper). dubbo-go v3.3.2 gives its Nacos
// clients no TLS setting; these keys are this module's.
const (
	// TLSEnableKey turns TLS on: "true" or "false" (default false).
	TLSEnableKey = "nacos.tls.enable"
	// TLSCAFileKey is a PEM file of the certificates that sign the
	// server's; default the system's roots.
	TLSCAFileKey = "nacos.tls.ca-file"
	// TLSCertFileKey and TLSKeyFileKey are the PEM files of the
	// client's certificate and key, for a server that asks for one; both
	// or neither.
	TLSCertFileKey = "nacos.tls.cert-file"
	TLSKeyFileKey  = "nacos.tls.key-file"
	// TLSServerNameKey is the name the server's certificate must
	// carry; default the host of the registry address.
	TLSServerNameKey = "nacos.tls.server-name"
)

// TLS is the TLS setting of the registry's Nacos clients; the zero
// value is plain TCP.
type TLS struct {
	Enable     bool
	CAFile     string
	CertFile   string
	KeyFile    string
	ServerName string
}

// ReadTLS reads the TLS*Key parameters of the registry URL u
// (nil: TLS off). See ParseTLS for the errors.
func ReadTLS(u *common.URL) (TLS, error) {
	return ParseTLS(func(key string) string {
		if u == nil {
			return ""
		}
		return u.GetParam(key, "")
	})
}

// ParseTLS is ReadTLS over param, which returns a key's raw value
// ("" when unset). A setting that cannot be what the user meant is an
// error, never a silent fall-back to plain TCP: an enable that is not a
// boolean, a file or server name given while TLS is off, a certificate
// without its key or a key without its certificate. It reads no file and
// never panics.
func ParseTLS(param func(key string) string) (TLS, error) {
	t := TLS{
		CAFile:     param(TLSCAFileKey),
		CertFile:   param(TLSCertFileKey),
		KeyFile:    param(TLSKeyFileKey),
		ServerName: param(TLSServerNameKey),
	}
	if v := param(TLSEnableKey); v != "" {
		on, err := strconv.ParseBool(v)
		if err != nil {
			return TLS{}, fmt.Errorf("%s=%q is not true or false", TLSEnableKey, v)
		}
		t.Enable = on
	}
	if !t.Enable {
		for _, kv := range [][2]string{
			{TLSCAFileKey, t.CAFile}, {TLSCertFileKey, t.CertFile},
			{TLSKeyFileKey, t.KeyFile}, {TLSServerNameKey, t.ServerName},
		} {
			if kv[1] != "" {
				return TLS{}, fmt.Errorf("%s is set but %s is not true", kv[0], TLSEnableKey)
			}
		}
		return TLS{}, nil
	}
	if (t.CertFile == "") != (t.KeyFile == "") {
		return TLS{}, fmt.Errorf("%s and %s go together: give both or neither", TLSCertFileKey, TLSKeyFileKey)
	}
	return t, nil
}
