package console

import (
	"bufio"
	"fmt"
	"net/http"
	"strings"
	"text/tabwriter"
	"time"
)

// reportNames are the reports GET /api/v1/reports/{name} knows.
var reportNames = []string{"hosts", "status", "mime", "seeds", "cuts"}

func (s *Server) report(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	var (
		data any
		rows [][]string
		head []string
	)
	switch name {
	case "hosts":
		list, err := s.hostList(r.Context(), HostQuery{Sort: "fetched", Limit: 10_000})
		if err != nil {
			s.fail(w, err)
			return
		}
		data, head = list, []string{"HOST", "FETCHED", "ERRORS", "BYTES", "QUEUED", "STATE"}
		for _, h := range list {
			rows = append(rows, []string{h.Host, fmt.Sprint(h.Fetched), fmt.Sprint(h.Errors), fmt.Sprint(h.Bytes), fmt.Sprint(h.Queued), h.State})
		}
	case "status", "mime":
		counts := s.opts.Tally.StatusCodes()
		head = []string{"STATUS", "RESPONSES"}
		if name == "mime" {
			counts, head = s.opts.Tally.MIMETypes(), []string{"MIME TYPE", "RESPONSES"}
		}
		data = counts
		for _, c := range counts {
			rows = append(rows, []string{c.Name, fmt.Sprint(c.Count)})
		}
	case "seeds":
		seeds := s.opts.Tally.Seeds()
		data, head = seeds, []string{"SEED", "STATUS", "REDIRECTS", "FINAL"}
		for _, sd := range seeds {
			st := fmt.Sprint(sd.Status)
			switch {
			case sd.Error != "":
				st = "failed: " + sd.Error
			case sd.Status == 0:
				st = "not fetched yet"
			}
			rows = append(rows, []string{sd.Seed, st, fmt.Sprint(len(sd.RedirectTo)), sd.Final})
		}
	case "cuts":
		c := cuts(s.opts.Crawl.Counters())
		list := make([]Count, 0, len(c))
		for k, v := range c {
			list = append(list, Count{k, v})
		}
		list = sortCounts(list)
		data, head = list, []string{"REASON", "URLS"}
		for _, x := range list {
			rows = append(rows, []string{x.Name, fmt.Sprint(x.Count)})
		}
	default:
		writeError(w, http.StatusNotFound, "console: no report "+name+"; reports: "+strings.Join(reportNames, ", "))
		return
	}
	if !wantText(r) {
		writeJSON(w, http.StatusOK, map[string]any{"report": name, "time": time.Now().UTC(), "rows": data})
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	bw := bufio.NewWriter(w)
	tw := tabwriter.NewWriter(bw, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for _, row := range rows {
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	tw.Flush()
	bw.Flush()
}
