package main

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"syscall"

	"dubbo.apache.org/dubbo-go/v3/common"
	"dubbo.apache.org/dubbo-go/v3/common/constant"
	dgext "dubbo.apache.org/dubbo-go/v3/common/extension"
	"dubbo.apache.org/dubbo-go/v3/registry"
	dgnacos "dubbo.apache.org/dubbo-go/v3/remoting/nacos"
	"github.com/nacos-group/nacos-sdk-go/v2/vo"

	"github.com/dubbogo-lb/lb/samples/internal/greeter"
)

// loseRegistrationOnUSR1 withdraws, on every SIGUSR1, the greeter's
// instances at listen from every Nacos registry through the registry's own
// pooled Nacos client, behind dubbo-go's back: the interface-level
// instance, and the application-level instance of app (registry-type
// service or all; our service discovery registers it through the same
// pool). The server drops the instance, the client forgets it (no redo),
// and dubbo-go and our discovery still believe it registered, which is
// what a registration lost by the client leaves (see
// extension/internal/nacoskeeper). For the tests of the keeper.
func loseRegistrationOnUSR1(ctx context.Context, listen, app string) {
	onSignal(ctx, syscall.SIGUSR1, func() { loseRegistration(listen, app) })
}

func loseRegistration(listen, app string) {
	host, portStr, err := net.SplitHostPort(listen)
	port, perr := strconv.ParseUint(portStr, 10, 64)
	if err != nil || perr != nil {
		fmt.Printf("lose registration: bad address %q\n", listen)
		return
	}
	rf, ok := dgext.GetProtocol(constant.RegistryProtocol).(registry.RegistryFactory)
	if !ok {
		fmt.Println("lose registration: no registries")
		return
	}
	for _, reg := range rf.GetRegistries() {
		u := reg.GetURL()
		if u == nil {
			continue
		}
		var clientURL *common.URL
		var service, group string
		switch _, appLevel := reg.(registry.ServiceDiscoveryRegistry); {
		case u.Protocol == "nacos": // interface level: the registry's URL is its client's
			clientURL, service = u, "providers:"+greeter.Interface+"::"
			group = u.GetParam(constant.NacosGroupKey, constant.ServiceDiscoveryDefaultGroup)
		case appLevel && u.GetParam(constant.RegistryKey, "") == "nacos":
			// The pool's key: the client name and the namespace, as the
			// service discovery's client URL has them.
			clientURL, service = u.Clone(), app
			clientURL.SetParam(constant.NacosNamespaceID, u.GetParam(constant.RegistryNamespaceKey, ""))
			group = u.GetParam(constant.RegistryGroupKey, constant.ServiceDiscoveryDefaultGroup)
		default:
			continue
		}
		client, err := dgnacos.NewNacosClientByURL(clientURL) // the registry's, from gost's pool
		if err != nil {
			fmt.Printf("lose registration: %v\n", err)
			continue
		}
		ok, err := client.Client().DeregisterInstance(vo.DeregisterInstanceParam{
			Ip: host, Port: port, ServiceName: service, GroupName: group, Ephemeral: true,
		})
		client.Close() // gives back the reference NewNacosClientByURL took
		fmt.Printf("lose registration: withdrew %s of %s from Nacos group %s behind dubbo-go's back: %v %v\n", listen, service, group, ok, err)
	}
}
