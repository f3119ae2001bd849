package cluster

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Transport carries the exchange between agents: batches and hand-off
// parts, each answered by its receiver. An agent's exchange is HTTP/2
// over mutual TLS (exchange.go, the zero Config.Transport); tests connect
// agents in one process instead. Whatever carries them, the answers mean
// the same (the receiver, a Node, makes them):
//
//   - nil: the receiver acknowledges the call: a batch is durable in its
//     inbox (fsynced) or was already, a hand-off part is applied;
//   - a *StatusError of code 503 (Busy): back-pressure — the inbox is
//     full, the receiver is stopping, or it has not installed the view
//     the batch of ready URLs or the part was sent under; try again
//     after RetryAfter (zero for a view not installed: soon);
//   - a *StatusError of code 409 (StaleView): refused, routed under a
//     view older than the receiver's fence; its records go back to
//     routing once the sender holds a view of epoch View or newer
//     (fence.go);
//   - a *StatusError of another code: refused (malformed, unauthorised);
//   - any other error: not delivered, or its answer lost (the network);
//     the sender tries again: a batch received twice is applied once.
type Transport interface {
	// Listen makes r receive the calls addressed to this agent, until
	// Close.
	Listen(r Receiver) error
	// SendBatch delivers a batch's wire form to the agent to.
	SendBatch(ctx context.Context, to Peer, wire []byte) error
	// SendHandoff delivers one part of a hand-off to the agent to.
	SendHandoff(ctx context.Context, to Peer, h *Handoff) error
	// Close stops receiving and drops connections.
	Close() error
	// Refused is the number of connections closed at once for being past
	// the transport's bound (0 for one without connections).
	Refused() int64
}

// Peer names an agent for a Transport: its name, and its exchange's
// address while its lease is live.
type Peer struct {
	Name string
	Addr string
}

// Receiver is what a Transport delivers to: an agent's node. Each method
// answers as Transport says; it may be called concurrently.
type Receiver interface {
	ReceiveBatch(wire []byte) error
	ReceiveHandoff(h *Handoff) error
}

// StatusError is a receiver's answer other than an acknowledgement; over
// HTTP its code is the reply's status.
type StatusError struct {
	Code       int
	Body       string
	RetryAfter time.Duration
	// View is, with StatusConflict, the epoch of the receiver's fence: the
	// refused records go back to routing under a view at least as new.
	View uint64
}

func (e *StatusError) Error() string { return fmt.Sprintf("HTTP %d: %s", e.Code, e.Body) }

// busy is a back-pressure answer: try again after a second.
func busy(why string) *StatusError {
	return &StatusError{Code: http.StatusServiceUnavailable, Body: why, RetryAfter: time.Second}
}

// refused is an answer that no retry changes (a malformed call).
func refused(code int, why string) *StatusError { return &StatusError{Code: code, Body: why} }

// staleView refuses a batch routed under a view older than fence.
func staleView(epoch, fence uint64) *StatusError {
	return &StatusError{Code: http.StatusConflict, View: fence,
		Body: fmt.Sprintf("routed under view epoch %d, older than this agent's fence %d: route it again", epoch, fence)}
}

// isStatus reports whether err is a receiver's answer of code.
func isStatus(err error, code int) (*StatusError, bool) {
	var se *StatusError
	if errors.As(err, &se) && se.Code == code {
		return se, true
	}
	return nil, false
}

// asStatus makes a receiver's internal failure an answer (500).
func asStatus(err error) error {
	var se *StatusError
	if err == nil || errors.As(err, &se) {
		return err
	}
	return &StatusError{Code: http.StatusInternalServerError, Body: err.Error()}
}
