package agent

import (
	"fmt"
	"path/filepath"

	"github.com/petrel-crawler/petrel/internal/frontier"
	"github.com/petrel-crawler/petrel/internal/robots"
)

// openRobotsStore opens the robots store of the crawl directory's state
// (state/robots): the robots.txt outcomes of the authorities the frontier
// let go of in RAM. It is kept across runs: its records are what each
// robots.txt said at a wall time, valid whatever checkpoint the crawl
// resumes from, within RobotsExpiry.
func (a *Agent) openRobotsStore(state string) error {
	s, err := robots.OpenStore(filepath.Join(state, "robots"))
	if err != nil {
		return fmt.Errorf("agent: open robots store: %w", err)
	}
	a.robotsStore = s
	return nil
}

// frontierRobotsStore is the store for frontier.Config (nil when none is
// open).
func (a *Agent) frontierRobotsStore() frontier.RobotsStore {
	if a.robotsStore == nil {
		return nil
	}
	return a.robotsStore
}

// closeRobotsStore writes what the robots store buffers and closes it.
func (a *Agent) closeRobotsStore() error {
	if a.robotsStore == nil {
		return nil
	}
	err := a.robotsStore.Close()
	a.robotsStore = nil
	if err != nil {
		return fmt.Errorf("agent: close robots store: %w", err)
	}
	return nil
}
