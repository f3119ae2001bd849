package cluster

import (
	"bytes"
	"crypto/tls"
	"net/http"
	"time"
)

// plainTLSPost posts to the exchange as a client with no certificate.
func plainTLSPost(addr string, body []byte) error {
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, ForceAttemptHTTP2: true}}
	resp, err := hc.Post("https://"+addr+"/v1/batch", "application/octet-stream", bytes.NewReader(body))
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		return &StatusError{Code: resp.StatusCode}
	}
	return nil
}
