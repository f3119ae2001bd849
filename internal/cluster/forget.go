package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/petrel-crawler/petrel/internal/coord"
)

// Forgetting an agent (petrel cluster forget NAME): the operator's word
// that a dead agent will not come back. It writes forget/NAME; the
// crawl's writer of views then drops the agent from the view's absentees
// (once its death is decided: its lease expired and --cluster-grace
// passed), so the crawl can end without it. What only it held is given
// up: the URLs in its queues and its own outbox, as its last kept
// figures say. The batches the others hold for it are not given up: they
// are re-routed to the new owners (death.go).

// Forget asks the crawl to forget name, waits until a view without it
// (neither a member nor absent), and returns what was given up, as a
// sentence.
func Forget(ctx context.Context, crawl *coord.Crawl, name string) (string, error) {
	now, err := crawl.Read(ctx)
	if err != nil {
		return "", err
	}
	if _, ok := now.Agents[name]; ok {
		return "", fmt.Errorf("agent %s is alive: stop it first (forget is for an agent that is gone for good)", name)
	}
	v := now.View
	last, ok := now.Last[name]
	leaver := ok && last.Leaving && !last.Done
	if !v.Has(name) && !slices.Contains(v.Absent, name) && !leaver {
		return "", fmt.Errorf("agent %s is neither in the crawl's view nor absent from it, nor a leaver gone before its leave ended", name)
	}
	rev, err := crawl.Forget(ctx, name)
	if err != nil {
		return "", err
	}
	// The writer of views deletes the request with the view that drops
	// the agent (after one listing it absent, its keys taken over).
	given, _ := coord.GivenUp(last, ok)
	asked := false
	for st := range crawl.FollowFrom(ctx, rev) {
		if st.Forget[name] {
			asked = true
		} else if asked {
			msg := fmt.Sprintf("forgot agent %s: view %d without it; given up what only it held: %s, and what it found since; the other agents re-route the batches they hold for it to the new owners",
				name, st.View.Rev, given)
			return msg, nil
		}
	}
	return "", errors.New("cluster: forget: " + context.Cause(ctx).Error())
}

// keepLastEvery is how many publications pass between two of the
// figures kept without a lease (PublishLast).
const keepLastEvery = 5

// keepLast keeps this agent's figures without a lease every keepLastEvery
// publications, for a forget (count is the publication's number).
func (n *Node) keepLast(ctx context.Context, crawl *coord.Crawl, count int, rec coord.AgentRecord) {
	if count%keepLastEvery != 0 && !rec.Leaving {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	crawl.PublishLast(ctx, rec)
}
