package console

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// logStream is GET /api/v1/log: the recent crawl log lines as JSON, or
// with follow=1 the crawl log as server-sent events, each line one "data:"
// event, beginning with the last lines kept (tail=N, default 100). Lines
// lost because the reader was slower than the crawl are reported in a
// "dropped" event.
func (s *Server) logStream(w http.ResponseWriter, r *http.Request) {
	tail := 100
	if t := r.URL.Query().Get("tail"); t != "" {
		n, err := strconv.Atoi(t)
		if err != nil || n < 0 || n > 10_000 {
			writeError(w, http.StatusBadRequest, "console: tail must be between 0 and 10000")
			return
		}
		tail = n
	}
	hub := s.opts.Log
	if r.URL.Query().Get("follow") != "1" {
		writeJSON(w, http.StatusOK, map[string]any{"lines": hub.Recent(tail)})
		return
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		writeError(w, http.StatusInternalServerError, "console: streaming not supported")
		return
	}
	f, ok := hub.follow()
	if !ok {
		writeError(w, http.StatusServiceUnavailable, "console: too many log followers")
		return
	}
	defer hub.unfollow(f)
	rc := http.NewResponseController(w)
	rc.SetWriteDeadline(time.Time{}) // a stream outlives the server's write timeout
	rc.SetReadDeadline(time.Time{})
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	for _, l := range hub.Recent(tail) {
		writeEvent(w, "", l)
	}
	flusher.Flush()
	keep := time.NewTicker(15 * time.Second)
	defer keep.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-s.closing:
			return // the console is shutting down: its streams end at once
		case l := <-f.c:
			writeEvent(w, "", l)
			// Take what else is there before flushing.
			for n := 0; n < 256; n++ {
				select {
				case l := <-f.c:
					writeEvent(w, "", l)
					continue
				default:
				}
				break
			}
			if d := hub.takeDropped(f); d > 0 {
				writeEvent(w, "dropped", strconv.FormatInt(d, 10))
			}
			flusher.Flush()
		case <-keep.C:
			fmt.Fprint(w, ": keep-alive\n\n")
			flusher.Flush()
		}
	}
}

// writeEvent writes one server-sent event; a line never holds a newline
// (the hub splits on them), but a stray CR is escaped as the format needs.
func writeEvent(w http.ResponseWriter, event, data string) {
	if event != "" {
		fmt.Fprintf(w, "event: %s\n", event)
	}
	fmt.Fprintf(w, "data: %s\n\n", strings.ReplaceAll(data, "\r", `\r`))
}
