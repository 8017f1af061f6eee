package nacosconf

import "testing"

func TestZone(t *testing.T) {
	for _, c := range []struct{ param, cluster, want string }{
		{"", "", ""}, {"", "DEFAULT", ""}, {"", "az-1", "az-1"}, {" az-2 ", "az-1", "az-2"}, {"az-2", "DEFAULT", "az-2"}, {"  ", " az-1", "az-1"},
	} {
		if got := Zone(c.param, c.cluster); got != c.want {
			t.Errorf("Zone(%q, %q) = %q, want %q", c.param, c.cluster, got, c.want)
		}
	}
}
