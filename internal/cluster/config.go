package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Live changes of cluster-wide settings. Every agent of a crawl holds the
// same cluster-wide values; a change is made on all of them or on none,
// under a config epoch (a counter, 0 before any change). The protocol, over
// the exchange, is a two-phase agreement run by the agent where the change
// was asked (ChangeConfig):
//
//  1. prepare: the proposer sends the proposed values to every member of
//     the view (all of them must be alive: a change never leaves one
//     behind). A member promises the epoch (one above its own, no other
//     proposal promised for it in the last promiseTTL) after its host's
//     PrepareConfig accepted the values; otherwise it answers 409 with the
//     reason, and the proposal is abandoned: nothing changed anywhere, the
//     members that promised are told to forget it (/v1/config/abort), and
//     the proposer returns the first refusal's reason.
//  2. commit: once every member promised, the proposer commits at home and
//     then at every member: the host's CommitConfig applies the values,
//     the epoch and the values are saved (state/cluster/config.json,
//     fsynced) and the epoch is gossiped.
//
// What travels is the crawl's whole set of changed values (name → value,
// in the settings' JSON form), not only the new ones: committing is
// idempotent, and an agent that missed a commit (unreachable then) catches
// up by fetching GET /v1/config from a member gossiping a newer epoch
// (configCatchUp). The values a host commits change what its hello
// compares: an agent starting later is compared against the current
// values, and its refusal names the config epoch.
//
// The mechanism knows nothing of what the values mean: any cluster-wide
// change (settings, a blocklist's entries under a name of the host's
// choosing) is proposed the same way, provided the host's PrepareConfig
// and CommitConfig understand its names.

// ConfigHost is implemented by a Host whose cluster-wide values can change
// while the crawl runs.
type ConfigHost interface {
	// PrepareConfig checks that values (the crawl's changed values after
	// the change) can be applied here, and applies nothing. Its error is
	// the refusal's reason, sent to the proposer.
	PrepareConfig(values map[string]any) error
	// CommitConfig applies values, which every member prepared (or which
	// the crawl committed while this agent was away), and returns this
	// agent's cluster-wide settings afterwards, which its hello compares.
	CommitConfig(ctx context.Context, epoch uint64, values map[string]any) ([][2]string, error)
}

// ErrConfigConflict is returned by ChangeConfig when a member promised
// another change of the same epoch (two changes asked at once on two
// agents): nothing changed; ask again.
var ErrConfigConflict = errors.New("cluster: another change of the cluster-wide settings is under way")

// configFile holds the config epoch and the values committed under it.
const configFile = "config.json"

// ConfigState is the crawl's cluster-wide values changed while it ran, under
// their epoch.
type ConfigState struct {
	Epoch  uint64         `json:"epoch"`
	Values map[string]any `json:"values"`
}

// configChange is the body of /v1/config/prepare, /commit and /abort.
type configChange struct {
	By    string      `json:"by"`
	State ConfigState `json:"state"`
}

// liveConfig is a Node's part of config changes.
type liveConfig struct {
	proposeMu sync.Mutex // one proposal at a time from this agent
	commitMu  sync.Mutex // serialises commits

	stateMu  sync.Mutex
	state    ConfigState
	settings [][2]string // this agent's cluster-wide settings now (hello)

	promiseMu sync.Mutex
	promised  *configChange
	promisedT time.Time

	epoch atomic.Uint64
}

// loadConfig reads the saved config epoch and values (none at a first
// start) and takes Config.Settings as the settings hello compares.
func (n *Node) loadConfig() error {
	c := &n.cc
	c.settings = n.cfg.Settings
	s, err := LoadConfigState(n.cfg.Dir)
	if err != nil {
		return err
	}
	c.state = s
	c.epoch.Store(c.state.Epoch)
	return nil
}

// Config returns the config epoch and the values changed under it (a
// copy).
func (n *Node) Config() ConfigState {
	n.cc.stateMu.Lock()
	defer n.cc.stateMu.Unlock()
	return ConfigState{Epoch: n.cc.state.Epoch, Values: maps.Clone(n.cc.state.Values)}
}

// ConfigEpoch returns the config epoch this agent is at.
func (n *Node) ConfigEpoch() uint64 { return n.cc.epoch.Load() }

// helloSettings returns the cluster-wide settings this agent compares.
func (n *Node) helloSettings() [][2]string {
	n.cc.stateMu.Lock()
	defer n.cc.stateMu.Unlock()
	return n.cc.settings
}

// ChangeConfig changes the cluster-wide values named in changes on every
// agent of the crawl, all or nothing, by the two phases above, and returns
// the new config epoch. The error names the agent that refused and its
// reason, or the agent that cannot be reached (nothing changed then); if
// the change is in force but some member's commit was not answered before
// ctx ended, the error says so and the member catches up by gossip.
func (n *Node) ChangeConfig(ctx context.Context, changes map[string]any) (uint64, error) {
	c := &n.cc
	c.proposeMu.Lock()
	defer c.proposeMu.Unlock()
	if _, ok := n.host.(ConfigHost); !ok {
		return 0, errors.New("cluster: this agent cannot change cluster-wide settings")
	}
	v := n.View()
	if v == nil || !n.isReady() {
		return 0, errors.New("cluster: the crawl's agents are not all here yet: a cluster-wide setting changes on all of them or on none")
	}
	targets, err := n.configTargets(v)
	if err != nil {
		return 0, err
	}
	cur := n.Config()
	next := ConfigState{Epoch: cur.Epoch + 1, Values: cur.Values}
	if next.Values == nil {
		next.Values = map[string]any{}
	}
	maps.Copy(next.Values, changes)
	p := configChange{By: n.cfg.Name, State: next}
	body, _ := json.Marshal(p)
	if err := n.prepareConfig(&p); err != nil {
		return 0, fmt.Errorf("refused by agent %s: %w", n.cfg.Name, err)
	}
	promised := []string{}
	for _, name := range slices.Sorted(maps.Keys(targets)) {
		out, err := n.client.post(ctx, targets[name], "/v1/config/prepare", body)
		if err != nil {
			n.abandonConfig(&p, promised, targets, body)
			var se *StatusError
			if errors.As(err, &se) && se.Code == http.StatusConflict {
				return 0, fmt.Errorf("refused by agent %s: %s", name, strings.TrimSpace(string(out)))
			}
			return 0, fmt.Errorf("cluster: agent %s did not answer the change (nothing changed): %w", name, err)
		}
		promised = append(promised, name)
	}
	n.log.Info("cluster: cluster-wide settings change", "epoch", next.Epoch, "values", next.Values)
	if err := n.commitConfig(ctx, next); err != nil {
		return 0, err
	}
	var missed []string
	for _, name := range slices.Sorted(maps.Keys(targets)) {
		if err := n.postUntil(ctx, targets[name], "/v1/config/commit", body); err != nil {
			missed = append(missed, name)
		}
	}
	if len(missed) > 0 {
		return next.Epoch, fmt.Errorf("cluster: config epoch %d in force; not yet at %s (they catch up by gossip)", next.Epoch, strings.Join(missed, ", "))
	}
	return next.Epoch, nil
}

// configTargets maps every member of v but this agent to its exchange
// address; an error if one is not alive.
func (n *Node) configTargets(v *View) (map[string]string, error) {
	out, missing := n.exchangesOf(v.Names())
	if missing != "" {
		return nil, fmt.Errorf("cluster: agent %s of the view is not alive: a cluster-wide setting changes on every agent or on none", missing)
	}
	return out, nil
}

// exchangesOf maps names (this agent left out) to the exchange addresses
// of the alive members among them; missing is the first name that is not
// an alive member ("" if none).
func (n *Node) exchangesOf(names []string) (out map[string]string, missing string) {
	alive := map[string]string{}
	for _, m := range n.aliveMembers() {
		if m.Meta.Exchange != "" {
			alive[m.Name] = m.Meta.Exchange
		}
	}
	out = map[string]string{}
	for _, name := range names {
		if name == n.cfg.Name {
			continue
		}
		if addr, ok := alive[name]; ok {
			out[name] = addr
		} else if missing == "" {
			missing = name
		}
	}
	return out, missing
}

// prepareConfig promises p's epoch here once the host accepted its values.
func (n *Node) prepareConfig(p *configChange) error {
	c := &n.cc
	if e := c.epoch.Load(); p.State.Epoch != e+1 {
		return fmt.Errorf("%w (config epoch %d proposed, this agent is at %d)", ErrConfigConflict, p.State.Epoch, e)
	}
	c.promiseMu.Lock()
	defer c.promiseMu.Unlock()
	if q := c.promised; q != nil && time.Since(c.promisedT) < promiseTTL && q.State.Epoch >= p.State.Epoch && q.By != p.By {
		return fmt.Errorf("%w (by agent %s)", ErrConfigConflict, q.By)
	}
	if err := n.host.(ConfigHost).PrepareConfig(p.State.Values); err != nil {
		return err
	}
	c.promised, c.promisedT = p, time.Now()
	return nil
}

// unpromiseConfig drops the promise of p, if it is the one held.
func (n *Node) unpromiseConfig(p *configChange) {
	c := &n.cc
	c.promiseMu.Lock()
	defer c.promiseMu.Unlock()
	if q := c.promised; q != nil && q.By == p.By && q.State.Epoch == p.State.Epoch {
		c.promised = nil
	}
}

// abandonConfig releases the promises made to a proposal that will not be
// committed (best effort: an unreleased promise lapses after promiseTTL).
func (n *Node) abandonConfig(p *configChange, promised []string, targets map[string]string, body []byte) {
	n.unpromiseConfig(p)
	n.postAll(promised, targets, "/v1/config/abort", body)
}

// postAll posts body to path at each of names (their addresses in
// targets), once each, best effort, a second at most each.
func (n *Node) postAll(names []string, targets map[string]string, path string, body []byte) {
	for _, name := range names {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		n.client.post(ctx, targets[name], path, body)
		cancel()
	}
}

// commitConfig applies s here if its epoch is newer than this agent's:
// the host applies the values, then the epoch and values are saved and
// gossiped. An older or equal epoch is ignored.
func (n *Node) commitConfig(ctx context.Context, s ConfigState) error {
	c := &n.cc
	c.commitMu.Lock()
	defer c.commitMu.Unlock()
	if s.Epoch <= c.epoch.Load() {
		return nil
	}
	settings, err := n.host.(ConfigHost).CommitConfig(ctx, s.Epoch, s.Values)
	if err != nil {
		return fmt.Errorf("cluster: config epoch %d: %w", s.Epoch, err)
	}
	b, _ := json.Marshal(s)
	if err := writeDurable(filepath.Join(n.cfg.Dir, configFile), append(b, '\n')); err != nil {
		return fmt.Errorf("cluster: save %s: %w", configFile, err)
	}
	c.stateMu.Lock()
	c.state, c.settings = s, settings
	c.stateMu.Unlock()
	c.epoch.Store(s.Epoch)
	c.promiseMu.Lock()
	c.promised = nil
	c.promiseMu.Unlock()
	n.members.setMeta(func(m *Meta) { m.ConfigEpoch = s.Epoch })
	return nil
}

// postUntil posts body to addr again until it is answered 200 or ctx ends.
func (n *Node) postUntil(ctx context.Context, addr, path string, body []byte) error {
	for {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := n.client.post(cctx, addr, path, body)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (n *Node) serveConfigPrepare(w http.ResponseWriter, r *http.Request) {
	p, ok := n.readConfigChange(w, r, true)
	if !ok {
		return
	}
	if err := n.prepareConfig(&p); err != nil {
		http.Error(w, err.Error(), http.StatusConflict)
		return
	}
	w.WriteHeader(http.StatusOK)
}

func (n *Node) serveConfigAbort(w http.ResponseWriter, r *http.Request) {
	if p, ok := n.readConfigChange(w, r, false); ok {
		n.unpromiseConfig(&p)
		w.WriteHeader(http.StatusOK)
	}
}

func (n *Node) serveConfigCommit(w http.ResponseWriter, r *http.Request) {
	p, ok := n.readConfigChange(w, r, true)
	if !ok {
		return
	}
	if p.State.Epoch > n.ConfigEpoch() {
		n.log.Info("cluster: cluster-wide settings change", "epoch", p.State.Epoch, "by", p.By, "values", p.State.Values)
	}
	if err := n.commitConfig(r.Context(), p.State); err != nil {
		n.log.Error("cluster: commit of cluster-wide settings", "err", err)
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// readConfigChange reads a config change's body; with needHost, an agent
// whose host cannot change its settings answers 409.
func (n *Node) readConfigChange(w http.ResponseWriter, r *http.Request, needHost bool) (configChange, bool) {
	var p configChange
	if _, ok := n.host.(ConfigHost); needHost && !ok {
		http.Error(w, "this agent cannot change cluster-wide settings", http.StatusConflict)
		return p, false
	}
	return p, readControl(w, r, &p, "config change", func() error {
		if p.State.Epoch == 0 {
			return errors.New("no config epoch")
		}
		return nil
	})
}

// readControl decodes a control call's JSON body (at most
// maxControlBytes) into v and checks it; a bad body is answered 400
// naming what, and readControl reports false.
func readControl(w http.ResponseWriter, r *http.Request, v any, what string, check func() error) bool {
	b, err := io.ReadAll(io.LimitReader(r.Body, maxControlBytes))
	if err == nil {
		err = json.NewDecoder(bytes.NewReader(b)).Decode(v)
	}
	if err == nil {
		err = check()
	}
	if err != nil {
		http.Error(w, "bad "+what+": "+err.Error(), http.StatusBadRequest)
		return false
	}
	return true
}

// configCatchUp commits a newer config epoch announced by gossip: an
// agent that missed a commit fetches the values of the member announcing
// the highest epoch above its own. It is one round of everyProbe.
func (n *Node) configCatchUp(ctx context.Context) {
	if _, ok := n.host.(ConfigHost); !ok || !n.isReady() {
		return
	}
	var best Member
	for _, m := range n.aliveMembers() {
		if m.Meta.ConfigEpoch > n.ConfigEpoch() && m.Meta.ConfigEpoch > best.Meta.ConfigEpoch && n.isAgreedOrMember(m.Name) {
			best = m
		}
	}
	if best.Name == "" {
		return
	}
	s, err := n.fetchConfig(ctx, best.Meta.Exchange)
	if err != nil || s.Epoch <= n.ConfigEpoch() {
		return
	}
	n.log.Info("cluster: cluster-wide settings learnt from a member", "epoch", s.Epoch, "from", best.Name)
	if err := n.commitConfig(ctx, s); err != nil {
		n.log.Error("cluster: catch up cluster-wide settings", "err", err)
	}
}

// isAgreedOrMember: a member whose settings agreed at hello, or one of the
// view (after a change its values are newer than what hello compared).
func (n *Node) isAgreedOrMember(name string) bool {
	if v := n.View(); v != nil && v.Has(name) {
		return true
	}
	return n.isAgreed(name)
}

func (n *Node) fetchConfig(ctx context.Context, addr string) (ConfigState, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var s ConfigState
	b, err := n.client.do(ctx, http.MethodGet, addr, "/v1/config", nil)
	if err == nil {
		err = json.Unmarshal(b, &s)
	}
	return s, err
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
