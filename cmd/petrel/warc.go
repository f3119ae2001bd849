package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/petrel-crawler/petrel/internal/agent"
	"github.com/petrel-crawler/petrel/internal/store"
	"github.com/petrel-crawler/petrel/internal/wacz"
)

// usageError is a command-line mistake (exit 2). A URL the archive does
// not hold is not one: it exits 1 with its one-line message.
func usageError(format string, a ...any) error {
	return flagError{fmt.Errorf(format, a...)}
}

func warcCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "warc", Short: "Inspect, index and package WARC files"}
	var lsJSON bool
	ls := &cobra.Command{
		Use:   "ls [--json] FILE|DIR...",
		Short: "List the records of WARC files (a directory: its *.warc.gz files)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			files, err := warcFilesOf(args, cmd.ErrOrStderr(), "not listed")
			if err != nil {
				return err
			}
			return store.ListRecords(files, cmd.OutOrStdout(), lsJSON)
		},
	}
	ls.Flags().BoolVar(&lsJSON, "json", false, "one JSON object per record instead of the table")
	cmd.AddCommand(ls, &cobra.Command{
		Use:   "check FILE|DIR|FILE.wacz...",
		Short: "Read WARC files through and validate every digest; check WACZ packages",
		Long: `Read WARC files through and validate every digest. A .wacz file is checked
as a package: every resource's size and SHA-256, the digest file, stored
(uncompressed) archive/ and indexes/ entries, and every index line against
the record it points at (URL, payload digest, date, length).`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var warcs []string
			for _, p := range args {
				if !strings.HasSuffix(p, ".wacz") {
					warcs = append(warcs, p)
					continue
				}
				r, err := wacz.Check(p)
				if err != nil {
					return fmt.Errorf("%s: %w", p, err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s: %d resources and %d index lines ok\n", p, r.Resources, r.IndexLines)
			}
			if len(warcs) == 0 {
				return nil
			}
			files, err := warcFilesOf(warcs, cmd.ErrOrStderr(), "not checked")
			if err != nil {
				return err
			}
			for _, p := range files {
				n, err := store.CheckFile(p)
				if err != nil {
					return fmt.Errorf("%s: %w", p, err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s: %d records, digests ok\n", p, n)
			}
			return nil
		},
	}, cdxjCmd(), indexCmd(), catCmd(), waczCmd())
	cmd.AddCommand(datasetCmds()...)
	return cmd
}

// warcFilesOf expands paths into WARC files as store.WARCFiles does and
// says on w each open file (*.open) it leaves out, what (e.g. "not
// checked"). Finding no WARC file is an error that counts the open files.
func warcFilesOf(paths []string, w io.Writer, what string) ([]string, error) {
	files, err := store.WARCFiles(paths)
	if err != nil {
		return nil, err
	}
	open, err := store.OpenWARCFiles(paths)
	if err != nil {
		return nil, err
	}
	for _, p := range open {
		fmt.Fprintf(w, "petrel: %s: still open (a crawl is writing it, or one that did not stop cleanly left it: its next run repairs it); %s\n", p, what)
	}
	if len(files) == 0 {
		s := "s"
		if len(open) == 1 {
			s = ""
		}
		return nil, fmt.Errorf("no WARC files in %s (%d open file%s skipped)", strings.Join(paths, ", "), len(open), s)
	}
	return files, nil
}

func waczCmd() *cobra.Command {
	var out, title string
	var blocksAbove int64
	cmd := &cobra.Command{
		Use:   "wacz CRAWL-DIR... -o FILE.wacz",
		Short: "Package crawl directories as a WACZ 1.1.1 file (ReplayWeb.page opens it)",
		Long: `Package one crawl directory (or several: the agents of a cluster) as a WACZ
1.1.1 file: the WARC files stored in archive/, the merged index in indexes/
(brought up to date first, as "petrel warc index" does), the seeds' pages in
pages/pages.jsonl and every other HTML page in pages/extraPages.jsonl, with
their titles, and datapackage.json with every file's size and SHA-256.`,
		Example: `  petrel warc wacz crawl -o crawl.wacz
  petrel warc check crawl.wacz`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return usageError("-o FILE.wacz is required")
			}
			for _, d := range args {
				if fi, err := os.Stat(filepath.Join(d, "warc")); err != nil || !fi.IsDir() {
					return usageError("%s is not a crawl directory (no warc/)", d)
				}
			}
			start := time.Now()
			r, err := wacz.Write(out, args, wacz.Options{Title: title, Software: "Petrel/" + agent.Version,
				CompressIndexAbove: blocksAbove})
			if err != nil {
				return err
			}
			secs := time.Since(start).Seconds()
			fmt.Fprintf(cmd.OutOrStdout(), "%s: %d WARC files (%.1f MiB), %d index lines, %d seed pages, %d other pages; %.1f MiB in %.2fs (%.0f MB/s)\n",
				out, r.WARCFiles, float64(r.WARCBytes)/(1<<20), r.IndexLines, r.Pages, r.ExtraPages,
				float64(r.Bytes)/(1<<20), secs, float64(r.Bytes)/1e6/max(secs, 1e-9))
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "the WACZ file to write")
	cmd.Flags().StringVar(&title, "title", "", "title of the package (default: the first directory's name)")
	cmd.Flags().Int64Var(&blocksAbove, "index-blocks-above", wacz.DefaultCompressIndexAbove,
		"an index larger than this many bytes is packaged as index.cdx.gz blocks with index.idx (-1: always)")
	return cmd
}

func catCmd() *cobra.Command {
	var body bool
	var date, dir string
	cmd := &cobra.Command{
		Use:   "cat [--body] [--date D] URL [--dir DIR | FILE...]\n  petrel warc cat [--body] FILE:OFFSET",
		Short: "Print a stored record, or with --body its payload decoded",
		Long: `Print the WARC record of a URL's capture (the latest, or the one closest to
--date), or with --body the payload decoded: chunking and Content-Encoding
undone, a revisit resolved to the record it refers to. The capture is looked
up in DIR's indexes/index.cdxj when there is one, else in its WARC files, or
in the WARC FILEs given (not a WACZ package: give the crawl directory it was
made from). FILE:OFFSET prints the record at that offset (the offset of
"petrel warc ls" and of the index).`,
		Example: `  petrel warc cat --dir crawl http://example.test/
  petrel warc cat --body --date 20240102 http://example.test/ --dir crawl
  petrel warc cat crawl/warc/petrel-20240102030405-00000.warc.gz:1234`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var when time.Time
			if date != "" {
				t, err := store.ParseCaptureDate(date)
				if err != nil {
					return usageError("--date: %v", err)
				}
				when = t
			}
			c, arch, err := locate(args, dir, when)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if !body {
				rec, err := store.ReadRecord(c.Path, c.Offset)
				if err != nil {
					return err
				}
				_, err = out.Write(rec)
				return err
			}
			p, err := arch.ReadPayload(c.Path, c.Offset)
			if err != nil {
				return err
			}
			if p.Truncated != "" {
				fmt.Fprintf(cmd.ErrOrStderr(), "petrel: a truncated capture (WARC-Truncated: %s): the payload is incomplete\n", p.Truncated)
			}
			if p.Err != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "petrel: %v\n", p.Err)
			}
			_, err = out.Write(p.Body)
			return err
		},
	}
	cmd.Flags().BoolVar(&body, "body", false, "print the payload, decoded, instead of the record")
	cmd.Flags().StringVar(&date, "date", "", "the capture closest to this date: YYYYMMDD[hhmmss] or RFC 3339 (default: the latest)")
	cmd.Flags().StringVar(&dir, "dir", "", "crawl directory (or directory of WARC files) to look in")
	return cmd
}

// locate finds the record "petrel warc cat" prints.
func locate(args []string, dir string, when time.Time) (store.Capture, store.Archive, error) {
	first := args[0]
	if len(args) == 1 && dir == "" {
		if i := strings.LastIndexByte(first, ':'); i > 0 && !strings.Contains(first, "://") {
			off, err := strconv.ParseInt(first[i+1:], 10, 64)
			if err != nil || off < 0 {
				return store.Capture{}, store.Archive{}, usageError("%q: want FILE:OFFSET with a byte offset", first)
			}
			path := first[:i]
			if _, err := os.Stat(path); err != nil {
				return store.Capture{}, store.Archive{}, usageError("%v", err)
			}
			if err := refuseWACZ(path); err != nil {
				return store.Capture{}, store.Archive{}, err
			}
			arch, err := store.OpenArchive(dirOf(path))
			if err != nil {
				arch = store.Archive{Files: []string{path}}
			}
			return store.Capture{Path: path, Offset: off}, arch, nil
		}
	}
	var arch store.Archive
	switch {
	case dir != "" && len(args) > 1:
		return store.Capture{}, arch, usageError("give --dir or WARC files, not both")
	case dir != "":
		a, err := store.OpenArchive(dir)
		if err != nil {
			return store.Capture{}, arch, usageError("--dir: %v", err)
		}
		arch = a
	case len(args) > 1:
		if err := refuseWACZ(args[1:]...); err != nil {
			return store.Capture{}, arch, err
		}
		files, err := store.WARCFiles(args[1:])
		if err != nil {
			return store.Capture{}, arch, usageError("%v", err)
		}
		arch = store.Archive{Files: files}
	default:
		return store.Capture{}, arch, usageError("give --dir DIR or WARC files to look for %s in", first)
	}
	c, err := arch.FindCapture(first, when)
	return c, arch, err
}

// refuseWACZ is a usage error naming the first of paths that is a WACZ
// package (a zip file), which "petrel warc cat" does not read; nil when
// there is none.
func refuseWACZ(paths ...string) error {
	for _, p := range paths {
		if isZip(p) {
			return usageError("%s is a WACZ package: warc cat reads WARC files and crawl directories (give the crawl directory it was made from, or the WARC files unzipped from its archive/)", p)
		}
	}
	return nil
}

// isZip reports whether the file at p begins as a zip file does.
func isZip(p string) bool {
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	var magic [4]byte
	_, err = io.ReadFull(f, magic[:])
	return err == nil && string(magic[:]) == "PK\x03\x04"
}

// dirOf returns the crawl directory a WARC file sits in (DIR for
// DIR/warc/FILE), or the file's own directory.
func dirOf(path string) string {
	d := strings.TrimSuffix(path, "/")
	if i := strings.LastIndexByte(d, '/'); i >= 0 {
		d = d[:i]
	} else {
		d = "."
	}
	if strings.HasSuffix(d, "/warc") {
		return strings.TrimSuffix(d, "/warc")
	}
	if d == "warc" {
		return "."
	}
	return d
}
