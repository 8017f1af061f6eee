package extension

import (
	"context"

	"github.com/dubbogo-lb/lb/extension/internal/keeper"
	"github.com/dubbogo-lb/lb/extension/internal/nacoskeeper"
)

// KeepOptions tune KeepRegistered; the zero value is valid: a read every
// DefaultKeepInterval, a registration missing on 2 reads in a row
// registered again.
type KeepOptions = keeper.Options

// DefaultKeepInterval is how often KeepRegistered reads Nacos by default.
const DefaultKeepInterval = keeper.DefaultInterval

// KeepRegistered keeps, until ctx is done, the interface-level Nacos
// registrations of the services this provider exports: every
// opts.Interval it reads each one's Nacos service through the Open API
// (the registry's namespace, group and login), and registers again, through
// the same dubbo-go registry and Nacos client and with the same URL, an
// instance the server answered without twice in a row, logging one WARN
// line. It never registers what the provider withdrew (graceful shutdown,
// unexport). Call it once, before or after the server starts serving; it
// returns at once, and an error when it cannot see what the provider
// registers or is already running. A Nacos client can lose a registration
// for good after a Nacos restart (see extension/internal/nacoskeeper).
func KeepRegistered(ctx context.Context, opts KeepOptions) error {
	return nacoskeeper.Keep(ctx, opts)
}
