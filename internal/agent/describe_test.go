package agent

import "testing"

// TestDescribeSettingsClusterWide checks that /config?describe=1 says of
// every setting what the settings table says: live or fixed, and
// cluster-wide or not (host-delay is, fetchers is not).
func TestDescribeSettingsClusterWide(t *testing.T) {
	a := &Agent{cur: Defaults()}
	tab := a.cur.Table()
	seen := map[string]bool{}
	for _, d := range a.DescribeSettings() {
		s := tab.Lookup(d.Name)
		if s == nil {
			t.Errorf("%s: not in the settings table", d.Name)
			continue
		}
		if d.ClusterWide != s.Cluster || d.Live != s.Live {
			t.Errorf("%s: described cluster_wide %v live %v, the table says %v, %v", d.Name, d.ClusterWide, d.Live, s.Cluster, s.Live)
		}
		seen[d.Name] = d.ClusterWide
	}
	if wide, ok := seen["host-delay"]; !ok || !wide {
		t.Errorf("host-delay: described %v (present %v), want cluster-wide", wide, ok)
	}
	if wide, ok := seen["fetchers"]; !ok || wide {
		t.Errorf("fetchers: described cluster-wide %v (present %v), want not", wide, ok)
	}
}
