package urlparam

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
	// NacosTLSEnableKey turns TLS on: "true" or "false" (default false).
	NacosTLSEnableKey = "nacos.tls.enable"
	// NacosTLSCAFileKey is a PEM file of the certificates that sign the
	// server's; default the system's roots.
	NacosTLSCAFileKey = "nacos.tls.ca-file"
	// NacosTLSCertFileKey and NacosTLSKeyFileKey are the PEM files of the
	// client's certificate and key, for a server that asks for one; both
	// or neither.
	NacosTLSCertFileKey = "nacos.tls.cert-file"
	NacosTLSKeyFileKey  = "nacos.tls.key-file"
	// NacosTLSServerNameKey is the name the server's certificate must
	// carry; default the host of the registry address.
	NacosTLSServerNameKey = "nacos.tls.server-name"
)

// NacosTLS is the TLS setting of the registry's Nacos clients; the zero
// value is plain TCP.
type NacosTLS struct {
	Enable     bool
	CAFile     string
	CertFile   string
	KeyFile    string
	ServerName string
}

// ReadNacosTLS reads the NacosTLS*Key parameters of the registry URL u
// (nil: TLS off). See ParseNacosTLS for the errors.
func ReadNacosTLS(u *common.URL) (NacosTLS, error) {
	return ParseNacosTLS(func(key string) string {
		if u == nil {
			return ""
		}
		return u.GetParam(key, "")
	})
}

// ParseNacosTLS is ReadNacosTLS over param, which returns a key's raw value
// ("" when unset). A setting that cannot be what the user meant is an
// error, never a silent fall-back to plain TCP: an enable that is not a
// boolean, a file or server name given while TLS is off, a certificate
// without its key or a key without its certificate. It reads no file and
// never panics.
func ParseNacosTLS(param func(key string) string) (NacosTLS, error) {
	t := NacosTLS{
		CAFile:     param(NacosTLSCAFileKey),
		CertFile:   param(NacosTLSCertFileKey),
		KeyFile:    param(NacosTLSKeyFileKey),
		ServerName: param(NacosTLSServerNameKey),
	}
	if v := param(NacosTLSEnableKey); v != "" {
		on, err := strconv.ParseBool(v)
		if err != nil {
			return NacosTLS{}, fmt.Errorf("%s=%q is not true or false", NacosTLSEnableKey, v)
		}
		t.Enable = on
	}
	if !t.Enable {
		for _, kv := range [][2]string{
			{NacosTLSCAFileKey, t.CAFile}, {NacosTLSCertFileKey, t.CertFile},
			{NacosTLSKeyFileKey, t.KeyFile}, {NacosTLSServerNameKey, t.ServerName},
		} {
			if kv[1] != "" {
				return NacosTLS{}, fmt.Errorf("%s is set but %s is not true", kv[0], NacosTLSEnableKey)
			}
		}
		return NacosTLS{}, nil
	}
	if (t.CertFile == "") != (t.KeyFile == "") {
		return NacosTLS{}, fmt.Errorf("%s and %s go together: give both or neither", NacosTLSCertFileKey, NacosTLSKeyFileKey)
	}
	return t, nil
}
