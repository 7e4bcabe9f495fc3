package netstack

import (
	"fmt"
	"regexp"
	"sort"

	"ergo.services/ergo/gen"
)

// staticRoute is a route added with AddRoute. match is an exact node name
// or a regular expression that must match the whole name.
type staticRoute struct {
	match  string
	re     *regexp.Regexp // nil when match is not a valid expression
	route  gen.NetworkRoute
	weight int
}

// AddRoute adds a static route. Routes are matched by exact name first,
// then by regular expression; within each group by descending weight.
func (s *Stack) AddRoute(match string, route gen.NetworkRoute, weight int) error {
	if match == "" {
		return gen.ErrIncorrect
	}
	r := &staticRoute{match: match, route: route, weight: weight}
	// Anchored, so "b@localhost" does not also match "ab@localhost".
	if re, err := regexp.Compile("^(?:" + match + ")$"); err == nil {
		r.re = re
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, existing := range s.routes {
		if existing.match == match {
			return fmt.Errorf("route %q: %w", match, gen.ErrTaken)
		}
	}
	s.routes = append(s.routes, r)
	return nil
}

// RemoveRoute removes the static route added with this match.
func (s *Stack) RemoveRoute(match string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, r := range s.routes {
		if r.match == match {
			s.routes = append(s.routes[:i], s.routes[i+1:]...)
			return nil
		}
	}
	return gen.ErrUnknown
}

// Route returns the static routes for name; gen.ErrNoRoute if none match.
func (s *Stack) Route(name gen.Atom) ([]gen.NetworkRoute, error) {
	s.mu.Lock()
	var exact, matched []*staticRoute
	for _, r := range s.routes {
		switch {
		case r.match == string(name):
			exact = append(exact, r)
		case r.re != nil && r.re.MatchString(string(name)):
			matched = append(matched, r)
		}
	}
	s.mu.Unlock()
	byWeight := func(rs []*staticRoute) {
		sort.SliceStable(rs, func(i, j int) bool { return rs[i].weight > rs[j].weight })
	}
	byWeight(exact)
	byWeight(matched)
	out := make([]gen.NetworkRoute, 0, len(exact)+len(matched))
	for _, r := range append(exact, matched...) {
		out = append(out, r.route)
	}
	if len(out) == 0 {
		return nil, gen.ErrNoRoute
	}
	return out, nil
}
