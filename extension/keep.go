package extension

import (
	"context"
	"time"

	"github.com/dubbogo-lb/lb/extension/internal/keeper"
	"github.com/dubbogo-lb/lb/extension/internal/nacosdiscovery"
	"github.com/dubbogo-lb/lb/extension/internal/nacoskeeper"
)

// KeepOptions tune KeepRegistered; the zero value is valid: a read every
// DefaultKeepInterval, a registration missing on 2 reads in a row
// registered again.
type KeepOptions struct {
	// Interval between two reads of Nacos (DefaultKeepInterval when not
	// positive). The first read comes one interval after KeepRegistered.
	Interval time.Duration
	// Misses is how many reads in a row must answer without an instance
	// before it is registered again (2 when below 1). A read that fails
	// starts the count again, so a Nacos restart in progress, or a view
	// that lags one read behind, never registers anything twice.
	Misses int
	// Warnf logs one line per repair and per failed repair (dubbo-go's
	// logger, at WARN, when nil).
	Warnf func(format string, args ...any)
}

// DefaultKeepInterval is how often KeepRegistered reads Nacos by default:
// every 10 s.
const DefaultKeepInterval = keeper.DefaultInterval

// appRegistrations are the application-level instances our Nacos service
// discovery registered and has not withdrawn (see init).
var appRegistrations = new(nacosdiscovery.Registrations)

// KeepRegistered keeps, until ctx is done, the Nacos registrations of
// this provider, at both levels: the interface-level registration of each
// service it exports (registry-type interface or all), and the
// application-level instance of each application it registers through
// this module's Nacos service discovery (registry-type service or all).
// Every opts.Interval it reads each one's Nacos service through the Open
// API (the registry's namespace, group and login), and registers again an
// instance the server answered without twice in a row, logging one WARN
// line: through the same dubbo-go registry and Nacos client with the same
// URL (interface level), or through the same discovery and Nacos client
// with the application's whole list of instances (application level: a
// batch registration replaces the client's list). It never registers what
// the provider withdrew (graceful shutdown, unexport, unregister). Call it
// once, before or after the server starts serving; it returns at once,
// and an error when it cannot see what the provider registers or is
// already running. A Nacos client can lose a registration for good after
// a Nacos restart (see extension/internal/nacoskeeper).
func KeepRegistered(ctx context.Context, opts KeepOptions) error {
	o := keeper.Options{Interval: opts.Interval, Misses: opts.Misses, Warnf: opts.Warnf}
	return nacoskeeper.Keep(ctx, o, appRegistrations)
}
