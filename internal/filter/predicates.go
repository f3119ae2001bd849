package filter

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/petrel-crawler/petrel/internal/urlx"
)

// Subject is what a filter decides on: a URL with how it was found and,
// from the parse stage on, its response. Fields a stage does not know are
// zero (the stages check that no filter reads them; see Stage.Check).
type Subject struct {
	URL     urlx.URL
	Depth   int    // link hops from the seed
	HopPath string // Heritrix's letters, oldest first ("" for a seed)

	Status      int    // HTTP status (parse, follow, store)
	ContentType string // Content-Type header as received (parse, follow, store)
	Duplicate   bool   // the payload duplicates one already stored (parse, follow)
	// Languages are the page's languages (parse, follow, store), as a
	// CDXJ line's languages field has them: ISO 639-3 codes, largest
	// share first, comma-separated; "" when none was identified.
	Languages string

	str, surt string // computed on first use
}

// NewSubject returns the Subject of u found with depth link hops along
// the hop path hops.
func NewSubject(u urlx.URL, depth int, hops string) *Subject {
	return &Subject{URL: u, Depth: depth, HopPath: hops}
}

func (s *Subject) urlString() string {
	if s.str == "" {
		s.str = s.URL.String()
	}
	return s.str
}

func (s *Subject) surtString() string {
	if s.surt == "" {
		s.surt = urlx.SURT(s.URL)
	}
	return s.surt
}

// predicate is a leaf of the tree: its text and its test.
type predicate struct {
	text string
	test func(s *Subject) bool
}

func (p predicate) eval(s *Subject) bool { return p.test(s) }
func (p predicate) String() string       { return p.text }

// predicateDef declares a predicate of the language.
type predicateDef struct {
	arity   int  // 0: no argument; 1: one; 2: one or more
	list    bool // arguments are split at commas
	needs   needs
	argHelp string
	example string
	doc     string
	make    func(args []string) (node, error)
}

func pred(name string, args []string, test func(s *Subject) bool) node {
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = quoteArg(a)
	}
	return predicate{text: name + "(" + strings.Join(quoted, ",") + ")", test: test}
}

// quoteArg writes an argument so that it parses back as itself: in double
// quotes when it holds a separator, a parenthesis, a quote or outer space.
func quoteArg(a string) string {
	if a != "" && a == strings.TrimSpace(a) && !strings.ContainsAny(a, `,()"\`) {
		return a
	}
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`)
	return `"` + r.Replace(a) + `"`
}

func oneString(name string, f func(arg string) func(s *Subject) bool) func([]string) (node, error) {
	return func(args []string) (node, error) { return pred(name, args, f(args[0])), nil }
}

func oneInt(name string, lo int, f func(n int) func(s *Subject) bool) func([]string) (node, error) {
	return func(args []string) (node, error) {
		n, err := strconv.Atoi(args[0])
		if err != nil || n < lo {
			return nil, fmt.Errorf("%q is not a whole number ≥ %d", args[0], lo)
		}
		return pred(name, args, f(n)), nil
	}
}

func lowerAll(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = strings.ToLower(a)
	}
	return out
}

// predicates is the language's vocabulary, with BUbiNG's names where
// BUbiNG has the predicate.
var predicates map[string]predicateDef

// init fills predicates: one entry per predicate, a table longer than a
// screen because the language has that many words (each entry its own
// arity, help, example and code), read one entry at a time.
func init() {
	predicates = map[string]predicateDef{
		"SchemeEquals": {arity: 1, argHelp: "a scheme", example: "SchemeEquals(https)", doc: "the URL's scheme is the argument",
			make: oneString("SchemeEquals", func(a string) func(*Subject) bool {
				a = strings.ToLower(a)
				return func(s *Subject) bool { return s.URL.Scheme == a }
			})},
		"HostEquals": {arity: 1, argHelp: "a host name", example: "HostEquals(www.example.org)", doc: "the URL's host is the argument (case-insensitive)",
			make: oneString("HostEquals", func(a string) func(*Subject) bool {
				a = strings.ToLower(a)
				return func(s *Subject) bool { return s.URL.Hostname() == a }
			})},
		"HostEndsWith": {arity: 1, argHelp: "a suffix", example: "HostEndsWith(.example.org)", doc: "the URL's host ends with the argument",
			make: oneString("HostEndsWith", func(a string) func(*Subject) bool {
				a = strings.ToLower(a)
				return func(s *Subject) bool { return strings.HasSuffix(s.URL.Hostname(), a) }
			})},
		"HostEndsWithOneOf": {arity: 2, list: true, argHelp: "suffixes", example: "HostEndsWithOneOf(.org,.net)", doc: "the URL's host ends with one of the arguments",
			make: func(args []string) (node, error) {
				suf := lowerAll(args)
				return pred("HostEndsWithOneOf", args, func(s *Subject) bool { return hasSuffixOneOf(s.URL.Hostname(), suf) }), nil
			}},
		"HostMatchesRegex": {arity: 1, argHelp: "a regular expression", example: `HostMatchesRegex(^cdn[0-9]+\.)`, doc: "the URL's host matches the RE2 expression (anywhere; anchor it with ^ and $)",
			make: regexPred("HostMatchesRegex", func(s *Subject) string { return s.URL.Hostname() })},
		"PortEquals": {arity: 1, argHelp: "a port", example: "PortEquals(8080)", doc: "the URL's port (the scheme's default when none is written) is the argument",
			make: oneInt("PortEquals", 1, func(n int) func(*Subject) bool {
				p := strconv.Itoa(n)
				return func(s *Subject) bool {
					if s.URL.Port == "" {
						return urlx.DefaultPort(s.URL.Scheme) == p
					}
					return s.URL.Port == p
				}
			})},
		"PathStartsWith": {arity: 1, argHelp: "a prefix", example: "PathStartsWith(/blog/)", doc: "the URL's path starts with the argument",
			make: oneString("PathStartsWith", func(a string) func(*Subject) bool {
				return func(s *Subject) bool { return strings.HasPrefix(s.URL.Path(), a) }
			})},
		"PathEndsWithOneOf": {arity: 2, list: true, argHelp: "suffixes", example: "PathEndsWithOneOf(.jpg,.png)", doc: "the URL's path ends with one of the arguments (case-insensitive)",
			make: func(args []string) (node, error) {
				suf := lowerAll(args)
				return pred("PathEndsWithOneOf", args, func(s *Subject) bool { return hasSuffixOneOfFold(s.URL.Path(), suf) }), nil
			}},
		"URLEquals": {arity: 1, argHelp: "a URL", example: "URLEquals(https://example.org/)", doc: "the URL, normalised, is the argument normalised",
			make: func(args []string) (node, error) {
				u, err := urlx.Parse(args[0])
				if err != nil {
					return nil, err
				}
				want := u.String()
				return pred("URLEquals", args, func(s *Subject) bool { return s.urlString() == want }), nil
			}},
		"URLContains": {arity: 1, argHelp: "a string", example: "URLContains(/calendar/)", doc: "the URL contains the argument",
			make: oneString("URLContains", func(a string) func(*Subject) bool {
				return func(s *Subject) bool { return strings.Contains(s.urlString(), a) }
			})},
		"URLMatchesRegex": {arity: 1, argHelp: "a regular expression", example: `URLMatchesRegex(.*\?.*sort=.*)`, doc: "the whole URL matches the RE2 expression (as Java's matches: anchored at both ends)",
			make: func(args []string) (node, error) {
				re, err := regexp.Compile(`^(?:` + args[0] + `)$`)
				if err != nil {
					return nil, err
				}
				return pred("URLMatchesRegex", args, func(s *Subject) bool { return re.MatchString(s.urlString()) }), nil
			}},
		"URLShorterThan": {arity: 1, argHelp: "a length", example: "URLShorterThan(256)", doc: "the URL has fewer characters than the argument",
			make: oneInt("URLShorterThan", 1, func(n int) func(*Subject) bool {
				return func(s *Subject) bool { return len(s.urlString()) < n }
			})},
		"SURTPrefix": {arity: 1, argHelp: "a SURT prefix", example: "SURTPrefix(http://(org,example,)", doc: "the URL's SURT form starts with the argument; a prefix without scheme matches both http and https",
			make: oneString("SURTPrefix", func(a string) func(*Subject) bool {
				a = strings.ToLower(a)
				bare := !strings.Contains(a, "://")
				return func(s *Subject) bool {
					p := s.surtString()
					if bare {
						p = strings.TrimPrefix(strings.TrimPrefix(p, "http://"), "https://")
					}
					return strings.HasPrefix(p, a)
				}
			})},
		"DuplicateSegmentsLessThan": {arity: 1, argHelp: "a count", example: "DuplicateSegmentsLessThan(3)", doc: "no path segment occurs the argument's number of times or more",
			make: oneInt("DuplicateSegmentsLessThan", 1, func(n int) func(*Subject) bool {
				return func(s *Subject) bool { return MaxSegmentRepeats(s.URL.Path()) < n }
			})},
		"DepthAtMost": {arity: 1, argHelp: "a number of link hops", example: "DepthAtMost(5)", doc: "the URL is at most the argument's link hops from its seed",
			make: oneInt("DepthAtMost", 0, func(n int) func(*Subject) bool {
				return func(s *Subject) bool { return s.Depth <= n }
			})},
		"IsSeed": {arity: 0, example: "IsSeed", doc: "the URL is a seed (its hop path is empty)",
			make: func([]string) (node, error) {
				return predicate{text: "IsSeed", test: func(s *Subject) bool { return s.HopPath == "" }}, nil
			}},
		"LastHopIs": {arity: 2, list: true, argHelp: "hop letters (L, R, E, X, P, M)", example: "LastHopIs(E,X)", doc: "the last hop of the URL's hop path is one of the letters",
			make: func(args []string) (node, error) {
				var letters string
				for _, a := range args {
					a = strings.ToUpper(a)
					if len(a) != 1 || !strings.Contains("LREXPM", a) {
						return nil, fmt.Errorf("%q is not a hop letter (L, R, E, X, P or M)", a)
					}
					letters += a
				}
				return pred("LastHopIs", args, func(s *Subject) bool {
					h := s.HopPath
					return h != "" && strings.IndexByte(letters, h[len(h)-1]) >= 0
				}), nil
			}},
		"ContentTypeStartsWith": {arity: 1, needs: needsResponse, argHelp: "a type prefix", example: "ContentTypeStartsWith(text/)", doc: "the response's Content-Type starts with the argument (case-insensitive)",
			make: oneString("ContentTypeStartsWith", func(a string) func(*Subject) bool {
				a = strings.ToLower(a)
				return func(s *Subject) bool { return hasPrefixFold(s.ContentType, a) }
			})},
		"StatusCategory": {arity: 1, needs: needsResponse, argHelp: "a digit 1 to 5", example: "StatusCategory(2)", doc: "the response's status is in the class (2: 2xx)",
			make: func(args []string) (node, error) {
				n, err := strconv.Atoi(args[0])
				if err != nil || n < 1 || n > 5 {
					return nil, fmt.Errorf("%q is not a status class 1 to 5", args[0])
				}
				return pred("StatusCategory", args, func(s *Subject) bool { return s.Status/100 == n }), nil
			}},
		"StatusEquals": {arity: 1, needs: needsResponse, argHelp: "a status code", example: "StatusEquals(404)", doc: "the response's status is the argument",
			make: oneInt("StatusEquals", 100, func(n int) func(*Subject) bool {
				return func(s *Subject) bool { return s.Status == n }
			})},
		"LanguageIsOneOf": {arity: 2, list: true, needs: needsResponse | needsLanguage, argHelp: "ISO 639-3 codes (und: none identified)", example: "LanguageIsOneOf(eng,fra)",
			doc: "the page's main language (the largest share of its text) is one of the ISO 639-3 codes; und stands for a response in which no language was identified (not a page, or too little text)",
			make: func(args []string) (node, error) {
				codes := lowerAll(args)
				for _, c := range codes {
					if len(c) != 3 || strings.Trim(c, "abcdefghijklmnopqrstuvwxyz") != "" {
						return nil, fmt.Errorf("%q is not an ISO 639-3 code (three letters)", c)
					}
				}
				return pred("LanguageIsOneOf", args, func(s *Subject) bool { return slices.Contains(codes, mainLanguage(s.Languages)) }), nil
			}},
		"IsDuplicate": {arity: 0, needs: needsDuplicate, example: "IsDuplicate", doc: "the response's payload is identical to one already stored (it was written as a revisit record)",
			make: func([]string) (node, error) {
				return predicate{text: "IsDuplicate", test: func(s *Subject) bool { return s.Duplicate }}, nil
			}},
	}
}

// mainLanguage returns the first code of a languages field, "und" for
// an empty one.
func mainLanguage(langs string) string {
	if langs == "" {
		return "und"
	}
	code, _, _ := strings.Cut(langs, ",")
	return code
}

func regexPred(name string, field func(s *Subject) string) func([]string) (node, error) {
	return func(args []string) (node, error) {
		re, err := regexp.Compile(args[0])
		if err != nil {
			return nil, err
		}
		return pred(name, args, func(s *Subject) bool { return re.MatchString(field(s)) }), nil
	}
}

func hasSuffixOneOf(s string, suffixes []string) bool {
	for _, suf := range suffixes {
		if strings.HasSuffix(s, suf) {
			return true
		}
	}
	return false
}

func hasSuffixOneOfFold(s string, suffixes []string) bool {
	for _, suf := range suffixes {
		if len(s) >= len(suf) && strings.EqualFold(s[len(s)-len(suf):], suf) {
			return true
		}
	}
	return false
}

func hasPrefixFold(s, p string) bool {
	return len(s) >= len(p) && strings.EqualFold(s[:len(p)], p)
}
