package nacoskeeper

import (
	"bytes"
	"net"
	"strconv"
	"strings"

	"dubbo.apache.org/dubbo-go/v3/common"
	"dubbo.apache.org/dubbo-go/v3/common/constant"
	gxset "github.com/dubbogo/gost/container/set"
)

// What dubbo-go v3.3.2 does, read here to know what it registered; the
// keeper registers again through the registry's own Register with the URL
// registeredURL returns, never with parameters of its own.

// reserveParams are the parameters a "simplified" registry keeps
// (registry/protocol/protocol.go, reserveParams).
var reserveParams = []string{
	"application", "codec", "exchanger", "serialization", "cluster", "connections", "deprecated", "group",
	"loadbalance", "mock", "path", "timeout", "token", "version", "warmup", "weight", "timestamp", "dubbo",
	"release", "interface", "registry.role",
}

// registeredURL is the URL the registry protocol registers for the
// provider URL provider with the registry regURL (getUrlToRegistry), with
// the host and port the Nacos registry registers (HandleRegisterIPAndPort).
func registeredURL(provider, regURL *common.URL) *common.URL {
	var u *common.URL
	if regURL.GetParamBool("simplified", false) {
		u = provider.CloneWithParams(reserveParams)
	} else {
		hidden := gxset.NewSet()
		for k := range provider.GetParams() {
			if strings.HasPrefix(k, ".") {
				hidden.Add(k)
			}
		}
		u = provider.CloneExceptParams(hidden)
	}
	common.HandleRegisterIPAndPort(u)
	return u
}

// serviceName is the Nacos service a URL is registered in
// (registry/nacos getServiceName): category:interface:version:group.
func serviceName(u *common.URL) string {
	var b bytes.Buffer
	role, _ := strconv.Atoi(u.GetParam(constant.RegistryRoleKey, strconv.Itoa(constant.NacosDefaultRoleType)))
	if role >= 0 && role < len(common.DubboNodes) {
		b.WriteString(common.DubboNodes[role])
	}
	for _, key := range []string{constant.InterfaceKey, constant.VersionKey, constant.GroupKey} {
		b.WriteString(constant.NacosServiceNameSeparator)
		if v := u.GetParam(key, ""); strings.TrimSpace(v) != "" {
			b.WriteString(v)
		}
	}
	return b.String()
}

// addr is the host:port a URL is registered with, as the Open API lists it.
func addr(u *common.URL) string {
	port, _ := strconv.Atoi(u.Port)
	return net.JoinHostPort(u.Ip, strconv.Itoa(port))
}

// registryKey identifies a registry of the registry protocol by its URL
// (registryProtocol.getRegistry's cache key).
func registryKey(regURL *common.URL) string {
	key := regURL.PrimitiveURL
	if ns := regURL.GetParam(constant.RegistryNamespaceKey, ""); ns != "" {
		key += "?" + constant.NacosNamespaceID + "=" + ns
	}
	return key
}

// nacosGroup is the Nacos group a Nacos registry registers in.
func nacosGroup(regURL *common.URL) string {
	return regURL.GetParam(constant.NacosGroupKey, regURL.GetParam(constant.RegistryGroupKey, constant.ServiceDiscoveryDefaultGroup))
}
