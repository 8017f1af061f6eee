// Package greeter is the one-method triple service that the sample
// provider, the sample consumer, the demo and the integration tests share.
//
// It is the hand-written equivalent of what protoc-gen-go-triple would
// generate for
//
//	service Greeter {
//	  rpc Hello(google.protobuf.StringValue) returns (google.protobuf.StringValue);
//	}
//
// (the generator cannot be installed here). The request carries a key, the
// reply names the provider that answered, so a consumer can count traffic
// shares. The client stub carries ClientInfo.MethodNames: a reference that
// knows its methods keeps the consumer's loadbalance setting in force over
// the provider's default (random); one made with client.NewService does not.
package greeter

import (
	"context"
	"errors"
	"reflect"

	"dubbo.apache.org/dubbo-go/v3/client"
	"dubbo.apache.org/dubbo-go/v3/common"
	"dubbo.apache.org/dubbo-go/v3/common/constant"
	"dubbo.apache.org/dubbo-go/v3/protocol/triple/triple_protocol"
	"dubbo.apache.org/dubbo-go/v3/server"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

const (
	// Interface is the service's interface name. With interface-level
	// registration its Nacos service is "providers:" + Interface + "::".
	Interface = "org.dubbogo.lb.samples.Greeter"
	// MethodHello is the name of the one method.
	MethodHello = "Hello"
	// Reference is the reference name under which a consumer's YAML
	// configures the client: dubbo.consumer.references.GreeterClient.
	Reference = "GreeterClient"
	// ProviderService is the service name under which a provider's YAML
	// configures the service: dubbo.provider.services.GreeterProvider.
	ProviderService = "GreeterProvider"
)

// Greeter is the client side of the service.
type Greeter interface {
	// Hello sends key and returns the name of the provider that answered.
	Hello(ctx context.Context, req *wrapperspb.StringValue, opts ...client.CallOption) (*wrapperspb.StringValue, error)
}

// ClientInfo describes the service to dubbo-go's client: its interface and
// its method names.
var ClientInfo = client.ClientInfo{
	InterfaceName: Interface,
	MethodNames:   []string{MethodHello},
	ConnectionInjectFunc: func(svc any, conn *client.Connection) {
		svc.(*stub).conn = conn
	},
}

// stub implements Greeter over a dubbo-go connection.
type stub struct {
	conn *client.Connection
}

// Reference names the reference whose YAML configuration applies to the
// stub (common.ReferencedRPCService).
func (*stub) Reference() string { return Reference }

// Hello implements Greeter.
func (s *stub) Hello(ctx context.Context, req *wrapperspb.StringValue, opts ...client.CallOption) (*wrapperspb.StringValue, error) {
	resp := new(wrapperspb.StringValue)
	if err := s.conn.CallUnary(ctx, []any{Request{req}}, resp, MethodHello, opts...); err != nil {
		return nil, err
	}
	return resp, nil
}

// Request is the request as the consumer's balancers see it, argument 0
// of the invocation: the StringValue itself on the wire, but its String
// method gives the plain key. A consistent-hash balancer hashes the string
// form of the argument (as Dubbo's String.valueOf does); protobuf's own
// String is its text format, whose spacing protobuf-go varies from one
// build to another on purpose, so the same key would move to another
// provider whenever the consumer is rebuilt.
type Request struct{ *wrapperspb.StringValue }

// String returns the key.
func (r Request) String() string { return r.GetValue() }

// NewGreeter returns a client of the service configured with opts only.
func NewGreeter(cli *client.Client, opts ...client.ReferenceOption) (Greeter, error) {
	if cli == nil {
		return nil, errors.New("greeter: nil client")
	}
	conn, err := cli.DialWithInfo(Interface, &ClientInfo, opts...)
	if err != nil {
		return nil, err
	}
	if !hasInvoker(conn) {
		return nil, errNoInvoker
	}
	return &stub{conn: conn}, nil
}

// NewConfiguredGreeter returns a client of the service configured by the
// reference named Reference in the client's consumer configuration (YAML
// dubbo.consumer.references.GreeterClient), which takes precedence over
// opts.
func NewConfiguredGreeter(cli *client.Client, opts ...client.ReferenceOption) (Greeter, error) {
	if cli == nil {
		return nil, errors.New("greeter: nil client")
	}
	s := new(stub)
	conn, err := cli.DialWithDefinition(Interface, &client.ClientDefinition{Svc: s, Info: &ClientInfo}, opts...)
	if err != nil {
		return nil, err
	}
	if !hasInvoker(conn) {
		return nil, errNoInvoker
	}
	s.conn = conn
	return s, nil
}

// errNoInvoker says why a connection cannot be used.
var errNoInvoker = errors.New("greeter: dubbo-go built no invoker for " + Interface +
	": is the registry reachable? (see dubbo-go's log above)")

// hasInvoker reports whether dubbo-go built an invoker for conn. When the
// registry cannot be reached, dubbo-go v3.3.2 returns no error from Dial
// but a connection whose every call dereferences a nil invoker and panics.
// The field is unexported, so it is read by reflection; should a later
// dubbo-go rename it, the check passes rather than refuse a good
// connection.
func hasInvoker(conn *client.Connection) bool {
	if conn == nil {
		return false
	}
	ref := reflect.ValueOf(conn).Elem().FieldByName("refOpts")
	if !ref.IsValid() || ref.Kind() != reflect.Pointer {
		return true
	}
	if ref.IsNil() {
		return false
	}
	inv := ref.Elem().FieldByName("invoker")
	if !inv.IsValid() || inv.Kind() != reflect.Interface {
		return true
	}
	return !inv.IsNil()
}

// Handler is the server side of the service.
type Handler interface {
	// Hello answers a request with the name of this provider.
	Hello(ctx context.Context, req *wrapperspb.StringValue) (*wrapperspb.StringValue, error)
}

// ServiceInfo describes the service to dubbo-go's server.
var ServiceInfo = common.ServiceInfo{
	InterfaceName: Interface,
	ServiceType:   (*Handler)(nil),
	Methods: []common.MethodInfo{{
		Name:        MethodHello,
		Type:        constant.CallUnary,
		ReqInitFunc: func() any { return new(wrapperspb.StringValue) },
		MethodFunc: func(ctx context.Context, args []any, handler any) (any, error) {
			req, ok := args[0].(*wrapperspb.StringValue)
			if !ok {
				return nil, errors.New("greeter: request is not a StringValue")
			}
			res, err := handler.(Handler).Hello(ctx, req)
			if err != nil {
				return nil, err
			}
			return triple_protocol.NewResponse(res), nil
		},
	}},
}

// GreeterProvider wraps a Handler to name its YAML configuration,
// dubbo.provider.services.GreeterProvider, to dubbo-go (which requires an
// exported type).
type GreeterProvider struct{ Handler }

// Reference returns ProviderService (common.ReferencedRPCService).
func (GreeterProvider) Reference() string { return ProviderService }

// Register registers h as the service's implementation on srv.
func Register(srv *server.Server, h Handler, opts ...server.ServiceOption) error {
	if srv == nil || h == nil {
		return errors.New("greeter: nil server or handler")
	}
	return srv.Register(GreeterProvider{h}, &ServiceInfo, opts...)
}
