package agent

import (
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
	if c.HostDelay.Duration != 250*time.Millisecond || c.MaxURLs != 7 || c.Scope != "host" || c.Assign != "bucket:4" {
		t.Errorf("settings not read: %+v", c)
	}
	if c.IPDelay.Duration != time.Second {
		t.Errorf("an unset setting lost its default: ip-delay %v", c.IPDelay)
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
}

func TestValidate(t *testing.T) {
	cases := []struct {
		name string
		mod  func(*Config)
		want string
	}{
		{"fetchers", func(c *Config) { c.Fetchers = 0 }, "--fetchers"},
		{"scope", func(c *Config) { c.Scope = "galaxy" }, "--scope"},
		{"assign", func(c *Config) { c.Assign = "random" }, "--assign"},
		{"max body", func(c *Config) { c.MaxBody = 10 }, "--max-body"},
		{"negative delay", func(c *Config) { c.HostDelay.Duration = -time.Second }, "--host-delay"},
		{"gzip level", func(c *Config) { c.WARCGzipLevel = 11 }, "--warc-gzip-level"},
		{"store below", func(c *Config) { c.WARCStoreBelow = -1 }, "--warc-store-below"},
		{"idle conns", func(c *Config) { c.MaxIdleConns = 0 }, "--max-idle-conns"},
		{"user agent", func(c *Config) { c.UserAgent = "" }, "--user-agent"},
		{"hosts file", func(c *Config) { c.HostsFile = "/nonexistent/hosts" }, "--hosts"},
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
