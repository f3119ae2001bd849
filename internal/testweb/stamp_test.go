package testweb

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestHitEndNotAfterClient: a handler that is late to note its end (here it
// sleeps after its flush, as a descheduled goroutine does on a loaded
// machine) still logs an End no later than the moment the client had read
// the whole response, and a Start no earlier than the client's request;
// the second response on the same connection gets its own End.
func TestHitEndNotAfterClient(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	log := &hitLog{max: 10}
	srv := &http.Server{ConnContext: stampContext, Handler: http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		h := Hit{Path: r.URL.Path, Start: time.Now()}
		writeBody(rw, http.StatusOK, "text/plain", []byte("hello\n"))
		rw.(http.Flusher).Flush()
		time.Sleep(50 * time.Millisecond)
		endHTTP(&h, rw, r)
		log.record(h)
	})}
	go srv.Serve(stampListener{ln})
	defer srv.Close()

	c := &http.Client{}
	var sent, read []time.Time
	for _, p := range []string{"/a", "/b"} {
		sent = append(sent, time.Now())
		resp, err := c.Get("http://" + ln.Addr().String() + p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadAll(resp.Body); err != nil {
			t.Fatal(err)
		}
		read = append(read, time.Now())
		resp.Body.Close()
		time.Sleep(100 * time.Millisecond) // the handler's late note is done
	}
	hits := log.all()
	if len(hits) != 2 {
		t.Fatalf("%d hits, want 2", len(hits))
	}
	for i, h := range hits {
		if h.Start.Before(sent[i]) {
			t.Errorf("%s: Start %v before the client sent the request", h.Path, sent[i].Sub(h.Start))
		}
		if h.End.After(read[i]) {
			t.Errorf("%s: End %v after the client had read the response", h.Path, h.End.Sub(read[i]))
		}
		if h.End.Before(h.Start) {
			t.Errorf("%s: End before Start", h.Path)
		}
		if h.Cut {
			t.Errorf("%s: marked Cut, the client read it all", h.Path)
		}
	}
}

// TestHitLogEndOrder: hits noted out of End order are kept in End order.
func TestHitLogEndOrder(t *testing.T) {
	l := &hitLog{max: 10}
	t0 := time.Now()
	for _, ms := range []int{1, 3, 2, 5, 0, 4} {
		l.record(Hit{End: t0.Add(time.Duration(ms) * time.Millisecond)})
	}
	hits := l.all()
	for i := range hits {
		if want := t0.Add(time.Duration(i) * time.Millisecond); !hits[i].End.Equal(want) {
			t.Fatalf("hit %d ends at +%v, want +%v", i, hits[i].End.Sub(t0), want.Sub(t0))
		}
	}
}

// TestHitEndHTTP2Stream: over HTTP/2, where the connection outlives a
// stream the client resets, a response read in full has an End no later
// than the client's reading it and is not Cut, and a response the client
// gave up is Cut with an End no later than its giving up, however long
// the handler goes on writing (its connection carries on).
func TestHitEndHTTP2Stream(t *testing.T) {
	log := &hitLog{max: 10}
	gaveUp := make(chan struct{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		rw = stampStream(rw, r)
		h := Hit{Path: r.URL.Path, Start: time.Now()}
		rw.Header().Set("Content-Length", "200000")
		io.WriteString(rw, "first part\n")
		rw.(http.Flusher).Flush()
		if r.URL.Path == "/cut" {
			<-r.Context().Done()
			<-gaveUp
			time.Sleep(30 * time.Millisecond)
		}
		rw.Write(make([]byte, 200000-len("first part\n")))
		time.Sleep(50 * time.Millisecond) // a late note
		endHTTP(&h, rw, r)
		log.record(h)
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	c := srv.Client()

	resp, err := c.Get(srv.URL + "/full")
	if err != nil || resp.ProtoMajor != 2 {
		t.Fatalf("GET /full: %v (want HTTP/2)", err)
	}
	io.ReadAll(resp.Body)
	read := time.Now()
	resp.Body.Close()

	ctx, cancel := context.WithCancel(t.Context())
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/cut", nil)
	resp, err = c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Read(make([]byte, 5))
	cancel()
	gave := time.Now()
	close(gaveUp)
	resp.Body.Close()
	time.Sleep(200 * time.Millisecond) // the handler ends
	hits := log.all()
	if len(hits) != 2 {
		t.Fatalf("%d hits, want 2", len(hits))
	}
	if h := hits[0]; h.Path != "/full" || h.Cut || h.End.After(read) || h.End.Before(h.Start) {
		t.Errorf("read in full: %+v; want not cut, End %v no later than the client's reading", h, h.End.Sub(read))
	}
	if h := hits[1]; h.Path != "/cut" || !h.Cut || h.End.After(gave) {
		t.Errorf("given up: %+v; want cut, End %v no later than the giving up", h, h.End.Sub(gave))
	}
}
