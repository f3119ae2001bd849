package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cespare/xxhash/v2"
)

// View is an explicit, versioned ownership view: the agents that own
// politeness-key groups and IP addresses, with the epoch that names this
// version. Two agents holding views of the same epoch hold the same view.
// A View is immutable once built with NewView; share it by pointer.
type View struct {
	Epoch  uint64      `json:"epoch"`
	Agents []ViewAgent `json:"agents"` // sorted by name, names distinct
	// Absent names the agents taken out of the view by a death (death.go)
	// and not forgotten: they own no keys, but may hold work only they
	// have, so the crawl is not over while one is listed. Sorted.
	Absent []string `json:"absent,omitempty"`

	uniform bool     // every weight is the same
	seeds   []uint64 // xxhash of each agent's name, in Agents' order
}

// ViewAgent is one owner of a view.
type ViewAgent struct {
	Name   string `json:"name"`
	Weight uint32 `json:"weight"` // share of keys relative to the others (≥ 1)
	// Exchange is the agent's exchange address (not part of ownership).
	Exchange string `json:"exchange,omitempty"`
}

// NewView builds the view of epoch over agents (copied and sorted by name).
// A zero weight counts as 1. Names must be non-empty and distinct.
func NewView(epoch uint64, agents []ViewAgent) (*View, error) {
	as := slices.Clone(agents)
	slices.SortFunc(as, func(a, b ViewAgent) int { return strings.Compare(a.Name, b.Name) })
	v := &View{Epoch: epoch, Agents: as, uniform: true}
	for i := range as {
		if as[i].Name == "" {
			return nil, errors.New("cluster: view: an agent has no name")
		}
		if i > 0 && as[i].Name == as[i-1].Name {
			return nil, fmt.Errorf("cluster: view: agent %q twice", as[i].Name)
		}
		if as[i].Weight == 0 {
			as[i].Weight = 1
		}
		v.seeds = append(v.seeds, xxhash.Sum64String(as[i].Name))
		if as[i].Weight != as[0].Weight {
			v.uniform = false
		}
	}
	return v, nil
}

// viewFile holds, in a node's state directory, the view in force.
const viewFile = "view.json"

func saveView(path string, v *View) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return writeDurable(path, append(b, '\n'))
}

// LoadView reads the view saved in a node's state directory (Config.Dir);
// nil, and no error, if there is none.
func LoadView(dir string) (*View, error) {
	path := filepath.Join(dir, viewFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cluster: view: %w", err)
	}
	v := new(View)
	if err := json.Unmarshal(b, v); err != nil {
		return nil, fmt.Errorf("cluster: view %s: %w", path, err)
	}
	return v, nil
}

// Returning reports whether the change from old to v brings agent name
// back after a death: listed absent in old, a member of v.
func Returning(name string, old, v *View) bool {
	return !old.Has(name) && v.Has(name) && slices.Contains(old.Absent, name)
}

// DeclaredDead reports whether the change from old to v is the crawl
// declaring agent name dead: a member of old (or none held), listed
// absent in v.
func DeclaredDead(name string, old, v *View) bool {
	return (old == nil || old.Has(name)) && !v.Has(name) && slices.Contains(v.Absent, name)
}

// Has reports whether name owns keys in v.
func (v *View) Has(name string) bool {
	_, ok := slices.BinarySearchFunc(v.Agents, name, func(a ViewAgent, n string) int { return strings.Compare(a.Name, n) })
	return ok
}

// Names returns the agents' names, sorted.
func (v *View) Names() []string {
	out := make([]string, len(v.Agents))
	for i, a := range v.Agents {
		out[i] = a.Name
	}
	return out
}

// UnmarshalJSON builds the view with NewView, so that the derived fields
// are in step.
func (v *View) UnmarshalJSON(b []byte) error {
	var w struct {
		Epoch  uint64      `json:"epoch"`
		Agents []ViewAgent `json:"agents"`
		Absent []string    `json:"absent"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	nv, err := NewView(w.Epoch, w.Agents)
	if err != nil {
		return err
	}
	nv.Absent = w.Absent
	*v = *nv
	return nil
}

// String is "epoch 3: a, b, c", with " (absent: d)" when agents are absent.
func (v *View) String() string {
	s := fmt.Sprintf("epoch %d: %s", v.Epoch, strings.Join(v.Names(), ", "))
	if len(v.Absent) > 0 {
		s += " (absent: " + strings.Join(v.Absent, ", ") + ")"
	}
	return s
}

// Share returns name's part of the keys: its weight over the sum of the
// owners' weights (0 when name owns none).
func (v *View) Share(name string) float64 {
	var mine, all float64
	for _, a := range v.Agents {
		all += float64(a.Weight)
		if a.Name == name {
			mine = float64(a.Weight)
		}
	}
	if all == 0 {
		return 0
	}
	return mine / all
}
