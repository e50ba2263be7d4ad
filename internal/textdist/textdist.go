// Package textdist measures how far apart two names are, for the "did you
// mean" suggestions mcphub makes: a mistyped registry key, an unknown tool.
package textdist

import (
	"slices"
	"strings"
)

// Distance is the Levenshtein edit distance between a and b, in bytes.
func Distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// Suggest returns at most limit of names that are close to name, for a "did
// you mean" suggestion; nil when none is. Names are compared without regard
// to case and ranked: first those that are name under a namespace prefix
// (ending in "__name" or ".name", the same name on another server), then
// those that contain name or that name contains, then those within an edit
// distance of max(2, len(name)/4), the nearest first. Names of the same rank
// keep their order in names.
func Suggest(name string, names []string, limit int) []string {
	type scored struct {
		name string
		rank int
	}
	var cands []scored
	lname := strings.ToLower(name)
	for _, n := range names {
		ln := strings.ToLower(n)
		switch {
		case strings.HasSuffix(ln, "__"+lname), strings.HasSuffix(ln, "."+lname):
			cands = append(cands, scored{n, -1})
		case strings.Contains(ln, lname), strings.Contains(lname, ln):
			cands = append(cands, scored{n, 0})
		default:
			if d := Distance(lname, ln); d <= max(2, len(name)/4) {
				cands = append(cands, scored{n, d})
			}
		}
	}
	slices.SortStableFunc(cands, func(a, b scored) int { return a.rank - b.rank })
	var out []string
	for i := 0; i < len(cands) && i < limit; i++ {
		out = append(out, cands[i].name)
	}
	return out
}
