package extension

import (
	"dubbo.apache.org/dubbo-go/v3/common"

	"github.com/dubbogo-lb/lb/internal/urlparam"
)

// consumerMarker is the dubbo-go config post-processor that makes every
// reference URL carry itself (urlparam.MarkConsumer) before dubbo-go
// refers it: dubbo-go's merge copies it onto every provider URL of the
// reference, where the balancers, the filter and the fallback read the
// consumer's own policy (the consumer-only keys of urlparam.Whose), which
// no provider can set.
type consumerMarker struct{}

// PostProcessReferenceConfig marks u as its providers' consumer.
func (consumerMarker) PostProcessReferenceConfig(u *common.URL) { urlparam.MarkConsumer(u) }

// PostProcessServiceConfig does nothing: providers have no consumer.
func (consumerMarker) PostProcessServiceConfig(*common.URL) {}
