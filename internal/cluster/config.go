package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/petrel-crawler/petrel/internal/coord"
)

// Live changes of cluster-wide settings. Every agent of a crawl holds the
// same cluster-wide values: they live in one etcd key (coord.Settings),
// written by one conditional transaction per change (ChangeConfig) after
// the asking agent's host checked the values, and applied by every agent
// from its watch (applySettings), in revision order. The config epoch is
// the revision of the key's last write. What travels is the crawl's whole
// set of changed values (name → value, in the settings' JSON form), so
// applying is idempotent; each agent saves the values it applied
// (state/cluster/config.json) for a restart before it reads etcd again.
//
// The mechanism knows nothing of what the values mean: any cluster-wide
// change (settings, a blocklist's entries under a name of the host's
// choosing) is made the same way, provided the host's PrepareConfig and
// CommitConfig understand its names.

// ErrConfigConflict is returned by ChangeConfig when another change was
// written between this one's read and its write: nothing changed; ask
// again.
var ErrConfigConflict = errors.New("cluster: another change of the cluster-wide settings came first")

// configFile holds the config epoch and the values applied under it.
const configFile = "config.json"

// ConfigState is the crawl's cluster-wide values changed while it ran,
// under their epoch.
type ConfigState struct {
	Epoch  uint64         `json:"epoch"`
	Values map[string]any `json:"values"`
}

// liveConfig is a Node's part of config changes.
type liveConfig struct {
	commitMu sync.Mutex // serialises commits
	stateMu  sync.Mutex
	state    ConfigState
	epoch    atomic.Uint64
}

// loadConfig reads the saved config epoch and values (none at a first
// start).
func (n *Node) loadConfig() error {
	s, err := LoadConfigState(n.cfg.Dir)
	if err != nil {
		return err
	}
	n.cc.state = s
	n.cc.epoch.Store(s.Epoch)
	return nil
}

// ConfigEpoch returns the config epoch this agent is at.
func (n *Node) ConfigEpoch() uint64 { return n.cc.epoch.Load() }

// ChangeConfig changes the cluster-wide values named in changes for the
// whole crawl, in one transaction, and returns the new config epoch.
// This agent's host checks the values first; its refusal changes nothing.
func (n *Node) ChangeConfig(ctx context.Context, changes map[string]any) (uint64, error) {
	_, crawl := n.crawlState()
	if crawl == nil || !n.isReady() {
		return 0, errors.New("cluster: this agent is not connected to the crawl's coordinators yet")
	}
	cur, err := crawl.Settings(ctx)
	if err != nil {
		return 0, fmt.Errorf("cluster: read the cluster-wide settings: %w", err)
	}
	next := orEmpty(maps.Clone(cur.Values))
	maps.Copy(next, changes)
	// The values are checked in their JSON form, as every agent reads them.
	b, _ := json.Marshal(next)
	var checked map[string]any
	json.Unmarshal(b, &checked)
	if err := n.host.PrepareConfig(checked); err != nil {
		return 0, fmt.Errorf("refused by agent %s: %w", n.cfg.Name, err)
	}
	rev, err := crawl.ChangeSettings(ctx, cur.Rev, next)
	if errors.Is(err, coord.ErrConflict) {
		return 0, ErrConfigConflict
	}
	if err != nil {
		return 0, fmt.Errorf("cluster: write the cluster-wide settings: %w", err)
	}
	n.log.Info("cluster: cluster-wide settings change", "epoch", rev, "values", next)
	return uint64(rev), n.commitConfig(ctx, ConfigState{Epoch: uint64(rev), Values: checked})
}

// applySettings applies the crawl's cluster-wide values read from etcd
// if they are newer than this agent's.
func (n *Node) applySettings(ctx context.Context, s coord.Settings) error {
	if s.Rev == 0 || uint64(s.Rev) <= n.ConfigEpoch() {
		return nil
	}
	return n.commitConfig(ctx, ConfigState{Epoch: uint64(s.Rev), Values: s.Values})
}

// commitConfig applies s here if its epoch is newer than this agent's:
// the host applies the values, then the epoch and values are saved. An
// older or equal epoch is ignored.
func (n *Node) commitConfig(ctx context.Context, s ConfigState) error {
	c := &n.cc
	c.commitMu.Lock()
	defer c.commitMu.Unlock()
	if s.Epoch <= c.epoch.Load() {
		return nil
	}
	if err := n.host.CommitConfig(ctx, s.Epoch, s.Values); err != nil {
		return fmt.Errorf("cluster: config epoch %d: %w", s.Epoch, err)
	}
	b, _ := json.Marshal(s)
	if err := writeDurable(filepath.Join(n.cfg.Dir, configFile), append(b, '\n')); err != nil {
		return fmt.Errorf("cluster: save %s: %w", configFile, err)
	}
	c.stateMu.Lock()
	c.state = s
	c.stateMu.Unlock()
	c.epoch.Store(s.Epoch)
	return nil
}

// LoadConfigState reads the config epoch and values saved in a node's
// state directory (Config.Dir); the zero ConfigState if there are none.
func LoadConfigState(dir string) (ConfigState, error) {
	var s ConfigState
	b, err := os.ReadFile(filepath.Join(dir, configFile))
	if errors.Is(err, os.ErrNotExist) {
		return s, nil
	}
	if err == nil {
		err = json.Unmarshal(b, &s)
	}
	if err != nil {
		return s, fmt.Errorf("cluster: %s: %w", configFile, err)
	}
	return s, nil
}
