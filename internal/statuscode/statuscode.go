// Package statuscode names the status codes of the triple protocol that
// the module counts (dubbo-go's triple_protocol.Code, gRPC's codes) and the
// sets of them whose failures outlier ejection counts: the filter judges
// each failure by its code on an rpcstatus.Board configured with such a
// set, and package outlier (loadbalance/internal/outlier) parses the set
// from the consumer's outlier.errors.
package statuscode

import "math"

// Status codes of the triple protocol that the module names (dubbo-go's
// triple_protocol.Code, gRPC's codes, and dubbo-go's biz_error for an
// error a provider's handler returned without a code).
const (
	Unknown          = 2
	DeadlineExceeded = 4
	Unimplemented    = 12
	Internal         = 13
	Unavailable      = 14
	DataLoss         = 15
	BizError         = 17
)

// Sets of status codes whose failures count, as rpcstatus.Board.Configure
// and the outlier configuration take them: bit c for status code c, bit 0
// (rpcstatus.NoCode) for failures without a status code.
const (
	// AlwaysCounted are the failures that count whatever the
	// configuration: no status code (transport errors, local timeouts),
	// deadline_exceeded and unavailable.
	AlwaysCounted uint32 = 1<<0 | 1<<DeadlineExceeded | 1<<Unavailable
	// DefaultCounted adds the codes of a provider that failed rather than
	// refused: internal, data_loss, unimplemented. Not unknown and
	// biz_error, the codes business errors arrive with (a Go handler's
	// plain error, a Java provider's exception), nor the codes that blame
	// the call (invalid_argument, not_found…) or its caller (canceled).
	DefaultCounted = AlwaysCounted | 1<<Internal | 1<<DataLoss | 1<<Unimplemented
	// AllCounted counts every failure.
	AllCounted uint32 = math.MaxUint32
)
