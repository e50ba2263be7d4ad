package toolsearch

import (
	"math"
	"strings"
	"testing"
)

func FuzzTerms(f *testing.F) {
	for _, s := range []string{"", "createIssue", "get_file_contents", "HTTPServer", "IDs", "v2Api", "ÉtatCivil", "İstanbul", "\xff\xfe", "ǅungla", "processes statuses addresses"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		for _, term := range Terms(text) {
			if term == "" {
				t.Fatalf("Terms(%q) holds an empty term", text)
			}
			if strings.ToLower(term) != term {
				t.Fatalf("Terms(%q) holds %q, which is not lowercase", text, term)
			}
			if stopwords[term] {
				t.Fatalf("Terms(%q) holds the stopword %q", text, term)
			}
		}
	})
}

func FuzzSearch(f *testing.F) {
	for _, q := range []string{"", "create issue", "repo", "read a file", "the", "xylophone", "fil fil fil", "\x00", "2"} {
		f.Add(q, 5)
	}
	f.Fuzz(func(t *testing.T, query string, limit int) {
		limit %= 50
		rs := toolIndex.Search(query, limit)
		if len(rs) > max(limit, 0) {
			t.Fatalf("Search(%q, %d) returned %d results", query, limit, len(rs))
		}
		for i, r := range rs {
			if r.Doc < 0 || r.Doc >= len(tools) {
				t.Fatalf("Search(%q) returned doc %d of %d", query, r.Doc, len(tools))
			}
			if !(r.Score > 0) || math.IsInf(r.Score, 0) {
				t.Fatalf("Search(%q) returned score %v", query, r.Score)
			}
			if i > 0 && (r.Score > rs[i-1].Score || r.Score == rs[i-1].Score && r.Doc <= rs[i-1].Doc) {
				t.Fatalf("Search(%q) results out of order: %v", query, rs)
			}
		}
	})
}
