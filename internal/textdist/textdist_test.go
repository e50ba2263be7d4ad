package textdist

import (
	"slices"
	"testing"
)

func TestDistance(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want int
	}{{"", "", 0}, {"comand", "command", 1}, {"abc", "", 3}, {"kitten", "sitting", 3}, {"same", "same", 0}} {
		if got := Distance(tt.a, tt.b); got != tt.want {
			t.Errorf("Distance(%q, %q) = %d; want %d", tt.a, tt.b, got, tt.want)
		}
		if Distance(tt.a, tt.b) != Distance(tt.b, tt.a) {
			t.Errorf("Distance is not symmetric for %q, %q", tt.a, tt.b)
		}
	}
}

func TestSuggest(t *testing.T) {
	for _, tt := range []struct {
		desc  string
		name  string
		names []string
		limit int
		want  []string
	}{
		{"namespaced first", "shape", []string{"shapes", "ordered__shape"}, 3, []string{"ordered__shape", "shapes"}},
		{"dotted prefix first", "read", []string{"reader", "fs.read"}, 3, []string{"fs.read", "reader"}},
		{"contains before distance", "issue", []string{"isue", "github__create_issue_comment"}, 3, []string{"github__create_issue_comment", "isue"}},
		{"contained in name", "github__create_issue", []string{"create_issue"}, 3, []string{"create_issue"}},
		{"nearest distance first", "comand", []string{"cmd", "commands", "command"}, 3, []string{"command", "commands"}},
		{"case ignored", "READ_FILE", []string{"fs__read_file"}, 3, []string{"fs__read_file"}},
		{"stable within a rank", "x", []string{"b__x", "a__x", "xa", "ax"}, 4, []string{"b__x", "a__x", "xa", "ax"}},
		{"limit", "x", []string{"a__x", "b__x", "c__x", "d__x"}, 3, []string{"a__x", "b__x", "c__x"}},
		{"distance bound grows with the name", "create_issues_now", []string{"create_isue_n", "create_isue"}, 3, []string{"create_isue_n"}},
		{"too far", "deploy", []string{"status", "logs"}, 3, nil},
		{"no names", "x", nil, 3, nil},
		{"zero limit", "x", []string{"a__x"}, 0, nil},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			got := Suggest(tt.name, tt.names, tt.limit)
			if !slices.Equal(got, tt.want) {
				t.Errorf("Suggest(%q, %q, %d) = %q; want %q", tt.name, tt.names, tt.limit, got, tt.want)
			}
		})
	}
}
