package filter

import (
	"fmt"
	"strings"
)

// Stage is one of BUbiNG's five points where a filter decides about a URL.
type Stage uint8

// The stages, in the order a URL meets them.
const (
	StageSchedule Stage = iota // before a URL enters the frontier (after --scope and the trap rules)
	StageFetch                 // before its request, as it comes up for dispatch
	StageParse                 // after its response is received: whether to parse it
	StageFollow                // after it is parsed: whether to follow its links and requisites
	StageStore                 // before its WARC records are written: whether to store it
	NumStages
)

var stageNames = [NumStages]string{"schedule", "fetch", "parse", "follow", "store"}

func (st Stage) String() string {
	if st < NumStages {
		return stageNames[st]
	}
	return fmt.Sprintf("stage(%d)", uint8(st))
}

// Setting returns the name of the stage's setting: "schedule-filter", ….
func (st Stage) Setting() string { return st.String() + "-filter" }

// Check reports whether e can be decided at the stage: the schedule and
// fetch stages have no response, and the store stage does not know yet
// whether the payload duplicates a stored one (the WARC writer finds out
// as it writes).
func (st Stage) Check(e *Expr) error {
	if e == nil {
		return nil
	}
	switch {
	case st <= StageFetch && e.needs&(needsResponse|needsDuplicate) != 0:
		return fmt.Errorf("the %s stage comes before the response: ContentTypeStartsWith, StatusCategory, StatusEquals, LanguageIsOneOf and IsDuplicate cannot be decided there", st)
	case st == StageStore && e.needs&needsDuplicate != 0:
		return fmt.Errorf("the store stage comes before the WARC writer knows whether the payload is a duplicate: IsDuplicate cannot be decided there (use it in the parse or follow stage)")
	}
	return nil
}

// Stages are the five filters of a crawl, parsed once. The zero value
// accepts everything. It is immutable: a change of a filter while the
// crawl runs makes a new Stages.
type Stages struct {
	exprs [NumStages]*Expr
}

// NewStages parses the filters of s, checking each against its stage; the
// error names the setting and the column.
func NewStages(s *Settings) (*Stages, error) {
	var st Stages
	for i, src := range s.filterTexts() {
		if strings.TrimSpace(*src) == "" {
			continue
		}
		e, err := Parse(*src)
		if err == nil {
			err = Stage(i).Check(e)
		}
		if err != nil {
			return nil, fmt.Errorf("--%s: %w", Stage(i).Setting(), err)
		}
		if c, ok := e.root.(constNode); ok && bool(c) {
			continue // "true": nothing to decide
		}
		st.exprs[i] = e
	}
	return &st, nil
}

// Active reports whether the stage has a filter (so that a caller builds
// no Subject for a stage that lets everything through).
func (st *Stages) Active(stage Stage) bool { return st != nil && st.exprs[stage] != nil }

// Accept reports whether the stage's filter accepts s.
func (st *Stages) Accept(stage Stage, s *Subject) bool {
	if st == nil {
		return true
	}
	return st.exprs[stage].Accept(s)
}

// NeedsLanguage reports whether a stage's filter reads a page's
// languages.
func (st *Stages) NeedsLanguage() bool {
	if st == nil {
		return false
	}
	for _, e := range st.exprs {
		if e.NeedsLanguage() {
			return true
		}
	}
	return false
}

// Rule returns the text of the stage's filter ("" when none).
func (st *Stages) Rule(stage Stage) string {
	if !st.Active(stage) {
		return ""
	}
	return st.exprs[stage].String()
}
