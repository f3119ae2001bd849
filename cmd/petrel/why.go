package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/petrel-crawler/petrel/internal/agent"
)

func whyCmd() *cobra.Command {
	var dir, addr, tokenFile string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "why URL [--dir DIR | --console IP:PORT]",
		Short: "Tell everything the crawl knows about one URL, and why it is (not) fetched",
		Long: `why answers for one URL: never seen; refused by which rule (scope, trap rule,
blocklist, robots.txt with the matching line, over budget); waiting in the sieve;
in the ready queue; queued in its visit state (position, next fetch times);
virtualized on disk; in flight; fetched (when, status, WARC file and offset,
digest, duplicate of what); failed (why, retries left).

A running crawl is asked through its console (--console); a stopped crawl
directory is read from its files (--dir, the default ./crawl). When the answer
depends on something the crawl did not keep, it says so.`,
		Example: `  petrel why https://example.org/page --console 127.0.0.1:8080
  petrel why https://example.org/page --dir ./crawl`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			out := cmd.OutOrStdout()
			if addr != "" {
				return whyConsole(out, addr, tokenFile, args[0], asJSON)
			}
			w, err := agent.WhyDir(dir, args[0])
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(w)
			}
			_, err = io.WriteString(out, w.Text())
			return err
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "./crawl", "stopped crawl directory to read")
	cmd.Flags().StringVar(&addr, "console", "", "console address (IP:PORT) of a running crawl to ask")
	cmd.Flags().StringVar(&tokenFile, "console-token-file", "", "token file, for a console that is not on loopback")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the answer as JSON")
	cmd.MarkFlagsMutuallyExclusive("dir", "console")
	return cmd
}

// whyConsole asks a running crawl's console.
func whyConsole(out io.Writer, addr, tokenFile, u string, asJSON bool) error {
	format := "text"
	if asJSON {
		format = "json"
	}
	req, err := http.NewRequest("GET", "http://"+addr+"/api/v1/why?format="+format+"&url="+url.QueryEscape(u), nil)
	if err != nil {
		return flagError{fmt.Errorf("--console %q: %v", addr, err)}
	}
	if tokenFile != "" {
		b, err := os.ReadFile(tokenFile)
		if err != nil {
			return flagError{fmt.Errorf("--console-token-file: %v", err)}
		}
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(b)))
	}
	client := &http.Client{Timeout: 2 * time.Minute}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("console %s: %w", addr, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if resp.StatusCode != http.StatusOK {
		var e struct{ Error string }
		if json.Unmarshal(body, &e) == nil && e.Error != "" {
			return fmt.Errorf("console %s: %s", addr, e.Error)
		}
		return fmt.Errorf("console %s: %s", addr, resp.Status)
	}
	_, err = out.Write(body)
	return err
}
