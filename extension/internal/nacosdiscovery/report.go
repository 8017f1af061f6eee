package nacosdiscovery

import (
	"time"

	"dubbo.apache.org/dubbo-go/v3/common"
	"dubbo.apache.org/dubbo-go/v3/metadata/info"
	"dubbo.apache.org/dubbo-go/v3/metadata/report"

	"github.com/dubbogo-lb/lb/extension/internal/nacosconf"
	"github.com/dubbogo-lb/lb/internal/lblog"
)

// RetryingReports wraps dubbo-go's factory of Nacos metadata reports so
// that a publication of an application's metadata that Nacos fails is
// tried again, as registrations are (nacos.retry and nacos.retry-wait of
// the report's URL, nacosconf.Retry). dubbo-go publishes it before it
// registers a provider's instance at application level, and fails the
// provider's start at the first error: seen as "client not connected"
// while the Nacos client of a provider connected to a Nacos just started
// on a busy machine. Everything else is passed on unchanged.
func RetryingReports(inner report.MetadataReportFactory) report.MetadataReportFactory {
	return &retryingFactory{inner: inner, sleep: time.Sleep}
}

type retryingFactory struct {
	inner report.MetadataReportFactory
	sleep func(time.Duration) // between two tries
}

func (f *retryingFactory) CreateMetadataReport(u *common.URL) report.MetadataReport {
	r := f.inner.CreateMetadataReport(u)
	if r == nil {
		return nil
	}
	return &retryingReport{MetadataReport: r, sleep: f.sleep}
}

type retryingReport struct {
	report.MetadataReport
	sleep func(time.Duration)
}

// PublishAppMetadata publishes, tried again while Nacos fails it.
func (r *retryingReport) PublishAppMetadata(application, revision string, mi *info.MetadataInfo) error {
	retry, problems := nacosconf.ReadRetry(r.URL())
	for _, p := range problems {
		lblog.Warnf("nacos discovery: %s", p)
	}
	return retry.Do(r.sleep, func(err error, try int) {
		lblog.Warnf("nacos discovery: publishing the metadata of %s (revision %s): %v; trying again (%d of %d)",
			application, revision, err, try, retry.Tries)
	}, func() error { return r.MetadataReport.PublishAppMetadata(application, revision, mi) })
}
