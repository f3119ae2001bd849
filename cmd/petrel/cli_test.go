package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/petrel-crawler/petrel/internal/agent"
)

func rootForTest() *cobra.Command {
	root := &cobra.Command{Use: "petrel", Version: "test", SilenceUsage: true, SilenceErrors: true}
	root.SetVersionTemplate("petrel {{.Version}}\n")
	root.AddCommand(crawlCmd(), configCmd(), versionCmd())
	return root
}

func run(t *testing.T, args ...string) string {
	t.Helper()
	root := rootForTest()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	if err := root.Execute(); err != nil {
		t.Fatalf("petrel %s: %v", strings.Join(args, " "), err)
	}
	return out.String()
}

func TestVersionFlag(t *testing.T) {
	if got := run(t, "--version"); got != "petrel test\n" {
		t.Errorf("petrel --version printed %q", got)
	}
}

// TestCrawlHelp checks that crawl --help lists the settings by group, with
// examples and every default.
func TestCrawlHelp(t *testing.T) {
	help := run(t, "crawl", "--help")
	last := -1
	for _, g := range []string{"Examples:", "Seeds and scope:", "Politeness:", "Limits:", "Fetching:", "Storage:", "Operations:", "Other:"} {
		i := strings.Index(help, "\n"+g+"\n")
		if i < 0 || i < last {
			t.Errorf("--help lacks %q in its place:\n%s", g, help)
		}
		last = i
	}
	for _, want := range []string{"--dns-timeout DUR", "(default 10s)", "--max-body BYTES", "(default 8MiB)", "--hosts FILE", "(default none)"} {
		if !strings.Contains(help, want) {
			t.Errorf("--help lacks %q", want)
		}
	}
	settings := help[strings.Index(help, "\nSeeds and scope:\n"):strings.Index(help, "\nOther:\n")]
	lines := strings.Split(settings, "\n")
	for i, line := range lines {
		// A long flag name puts its help on the next line.
		if strings.HasPrefix(line, "  --") && !strings.Contains(line, "(default ") &&
			(i+1 >= len(lines) || strings.HasPrefix(lines[i+1], "  --") || !strings.Contains(lines[i+1], "(default ")) {
			t.Errorf("a setting without its default: %q", line)
		}
	}
}

func TestCompletionOfEnums(t *testing.T) {
	for flag, want := range map[string][]string{"--scope": {"all", "host", "domain", "prefix"}, "--assign": {"authority", "domain", "bucket:16", "url"}} {
		got := run(t, cobra.ShellCompNoDescRequestCmd, "crawl", flag, "")
		for _, w := range want {
			if !strings.Contains(got, "\n"+w+"\n") && !strings.HasPrefix(got, w+"\n") {
				t.Errorf("completion of %s lacks %q:\n%s", flag, w, got)
			}
		}
	}
}

func TestConfigDefaultsLoadsBack(t *testing.T) {
	p := filepath.Join(t.TempDir(), "crawl.toml")
	if err := os.WriteFile(p, []byte(run(t, "config", "defaults")), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := withConfigFile(agent.Defaults(), p, crawlCmd().Flags())
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Errorf("the defaults file does not validate: %v", err)
	}
	if j := run(t, "config", "defaults", "--json"); !strings.Contains(j, `"max-body": "8MiB"`) || !strings.Contains(j, `"host-delay": "2s"`) {
		t.Errorf("JSON form: %s", j)
	}
}

// TestDemoDirSafety checks that demo --dir empties only an absent or empty
// directory, or an earlier demo's, unless --force.
func TestDemoDirSafety(t *testing.T) {
	base := t.TempDir()
	precious := filepath.Join(base, "precious")
	os.MkdirAll(precious, 0o755)
	os.WriteFile(filepath.Join(precious, "important.txt"), []byte("keep"), 0o644)
	err := clearDemoDir(precious, false)
	if err == nil || !strings.Contains(err.Error(), "--force") {
		t.Errorf("a directory of the user's: error %v, want a refusal naming --force", err)
	}
	if _, err := os.Stat(filepath.Join(precious, "important.txt")); err != nil {
		t.Fatalf("the user's file is gone: %v", err)
	}
	demo := filepath.Join(base, "demo")
	if err := clearDemoDir(demo, false); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(demo, "old.warc.gz"), []byte("x"), 0o644)
	if err := clearDemoDir(demo, false); err != nil {
		t.Fatalf("an earlier demo's directory refused: %v", err)
	}
	if _, err := os.Stat(filepath.Join(demo, "old.warc.gz")); !os.IsNotExist(err) {
		t.Errorf("an earlier demo's file stayed: %v", err)
	}
	if err := clearDemoDir(precious, true); err != nil {
		t.Errorf("--force refused: %v", err)
	}
}
