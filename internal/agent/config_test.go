package agent

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestConfigFile(t *testing.T) {
	dir := t.TempDir()
	write := func(s string) string {
		p := filepath.Join(dir, "c.toml")
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	c := Defaults()
	if err := c.LoadFile(write("host-delay = \"250ms\"\nmax-urls = 7\nscope = \"host\"\nassign = \"bucket:4\"\n")); err != nil {
		t.Fatal(err)
	}
	if c.Frontier.HostDelay != 250*time.Millisecond || c.Frontier.MaxURLs != 7 || c.Filter.Scope != "host" || c.Frontier.Assign.String() != "bucket:4" {
		t.Errorf("settings not read: %+v", c)
	}
	if c.Frontier.IPDelay != time.Second {
		t.Errorf("an unset setting lost its default: ip-delay %v", c.Frontier.IPDelay)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("valid settings refused: %v", err)
	}
	c = Defaults()
	if err := c.LoadFile(write("hots = \"x\"\n")); err == nil || !strings.Contains(err.Error(), "hots") {
		t.Errorf("unknown setting: error %v, want one naming it", err)
	}
	if err := c.LoadFile(write("host-delay = \"soon\"\n")); err == nil {
		t.Error("a bad duration was accepted")
	}
	c = Defaults()
	err := c.LoadFile(write("# a comment\nmax-urls = 3\n\nhost-dleay = \"1s\"\n"))
	if err == nil || !strings.Contains(err.Error(), "c.toml:4") || !strings.Contains(err.Error(), `"host-dleay"`) {
		t.Errorf("unknown setting on line 4: error %v, want one naming the file, line and key", err)
	}
	c = Defaults()
	if err := c.LoadFile(write("assign = \"random\"\n")); err == nil || !strings.Contains(err.Error(), "assign") {
		t.Errorf("bad --assign: error %v, want one naming it", err)
	}
	c = Defaults()
	if err := c.LoadFile(write("max-body = \"1MiB\"\nwarc-max-bytes = 65536\nseed-urls = [\"http://a.test/\"]\n")); err != nil {
		t.Fatal(err)
	}
	if c.Fetch.MaxBody != 1<<20 || c.Store.MaxFileBytes != 64<<10 || len(c.SeedURLs) != 1 {
		t.Errorf("sizes or list not read: max-body %d, warc-max-bytes %d, seed-urls %q", c.Fetch.MaxBody, c.Store.MaxFileBytes, c.SeedURLs)
	}
}

func TestValidate(t *testing.T) {
	cases := []struct {
		name string
		mod  func(*Config)
		want string
	}{
		{"fetchers", func(c *Config) { c.Fetchers = 0 }, "--fetchers"},
		{"scope", func(c *Config) { c.Filter.Scope = "galaxy" }, "--scope"},
		{"max body", func(c *Config) { c.Fetch.MaxBody = 10 }, "--max-body"},
		{"negative delay", func(c *Config) { c.Frontier.HostDelay = -time.Second }, "--host-delay"},
		{"gzip level", func(c *Config) { c.Store.GzipLevel = 11 }, "--warc-gzip-level"},
		{"store below", func(c *Config) { c.Store.StoreBelow = -1 }, "--warc-store-below"},
		{"idle conns", func(c *Config) { c.Fetch.MaxIdleConns = 0 }, "--max-idle-conns"},
		{"user agent", func(c *Config) { c.UserAgent = "" }, "--user-agent"},
		{"progress", func(c *Config) { c.Progress = -time.Second }, "--progress"},
		{"checkpoint", func(c *Config) { c.CheckpointEvery = -time.Second }, "--checkpoint-every"},
		{"max urls", func(c *Config) { c.Frontier.MaxURLs = -1 }, "--max-urls"},
		{"dns server", func(c *Config) { c.Fetch.DNSServer = "resolver" }, "--dns-server"},
		{"hosts file", func(c *Config) { c.Fetch.HostsFile = "/nonexistent/hosts" }, "--hosts"},
	}
	for _, tc := range cases {
		c := Defaults()
		tc.mod(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one naming %s", tc.name, err, tc.want)
		}
	}
	if d := Defaults(); d.Validate() != nil {
		err := d.Validate()
		t.Errorf("defaults refused: %v", err)
	}
}

// TestSettingsTable checks the declarations: every setting says whether it
// is live or why not, and petrel config defaults loads back to the
// defaults.
func TestSettingsTable(t *testing.T) {
	c := Defaults()
	for _, s := range c.Table() {
		if !s.Live && s.Fixed == "" {
			t.Errorf("--%s is neither live nor says why it is fixed", s.Name)
		}
		if s.Help == "" {
			t.Errorf("--%s has no help", s.Name)
		}
	}
	var buf strings.Builder
	if err := c.Table().WriteDefaults(&buf); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "defaults.toml")
	os.WriteFile(p, []byte(buf.String()), 0o644)
	var r Config
	r.Parsers = c.Parsers // written commented out: it depends on the machine
	if err := r.LoadFile(p); err != nil {
		t.Fatal(err)
	}
	if got, want := r.Table().Map(), c.Table().Map(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("defaults file loads to\n%v\nwant\n%v", got, want)
	}
}
