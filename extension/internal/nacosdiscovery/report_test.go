package nacosdiscovery

import (
	"errors"
	"slices"
	"testing"
	"time"

	"dubbo.apache.org/dubbo-go/v3/common"
	"dubbo.apache.org/dubbo-go/v3/metadata/info"
	"dubbo.apache.org/dubbo-go/v3/metadata/report"
)

// fakeReport fails its first fail publications.
type fakeReport struct {
	report.MetadataReport // nil: only what the wrapper calls is here
	url                   *common.URL
	fail, calls           int
}

func (f *fakeReport) PublishAppMetadata(string, string, *info.MetadataInfo) error {
	f.calls++
	if f.calls <= f.fail {
		return errors.New("client not connected, current status:UNHEALTHY")
	}
	return nil
}

func (f *fakeReport) URL() *common.URL { return f.url }

type fakeReportFactory struct{ r *fakeReport }

func (f fakeReportFactory) CreateMetadataReport(*common.URL) report.MetadataReport { return f.r }

// A publication of the application's metadata that Nacos fails is tried
// again with the registrations' backoff, up to nacos.retry more times.
func TestMetadataPublicationIsTriedAgain(t *testing.T) {
	ms := time.Millisecond
	for _, c := range []struct {
		name, params string
		fail, calls  int
		waits        []time.Duration
		ok           bool
	}{
		{"defaults", "", 3, 4, []time.Duration{10 * ms, 30 * ms, 90 * ms}, true},
		{"none failed", "", 0, 1, nil, true},
		{"retries used up", "?nacos.retry=1&nacos.retry-wait=100", 3, 2, []time.Duration{100 * ms}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			u, _ := common.NewURL("nacos://127.0.0.1:8848" + c.params)
			inner := &fakeReport{url: u, fail: c.fail}
			f := RetryingReports(fakeReportFactory{inner}).(*retryingFactory)
			var waits []time.Duration
			f.sleep = func(d time.Duration) { waits = append(waits, d) }
			err := f.CreateMetadataReport(u).PublishAppMetadata("app", "rev", &info.MetadataInfo{})
			if (err == nil) != c.ok || inner.calls != c.calls || !slices.Equal(waits, c.waits) {
				t.Errorf("error %v after %d calls, waits %v; want success %v after %d, waits %v", err, inner.calls, waits, c.ok, c.calls, c.waits)
			}
		})
	}
}
