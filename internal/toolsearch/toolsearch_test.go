package toolsearch

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
)

// tools resembles the catalog of a hub serving the GitHub, filesystem, memory
// and everything servers.
var tools = []Doc{
	{Name: "github__create_issue", Description: "Create a new issue in a GitHub repository.", Params: []string{"owner", "repo", "title", "body", "assignees", "labels", "milestone"}},
	{Name: "github__list_issues", Description: "List issues in a GitHub repository with filtering options.", Params: []string{"owner", "repo", "state", "labels", "sort", "direction", "since", "page", "perPage"}},
	{Name: "github__get_issue", Description: "Get details of a specific issue in a GitHub repository.", Params: []string{"owner", "repo", "issue_number"}},
	{Name: "github__add_issue_comment", Description: "Add a comment to an existing issue.", Params: []string{"owner", "repo", "issue_number", "body"}},
	{Name: "github__create_pull_request", Description: "Create a new pull request in a GitHub repository.", Params: []string{"owner", "repo", "title", "body", "head", "base", "draft"}},
	{Name: "github__search_repositories", Description: "Search for GitHub repositories.", Params: []string{"query", "page", "perPage"}},
	{Name: "github__get_file_contents", Description: "Get the contents of a file or directory from a GitHub repository.", Params: []string{"owner", "repo", "path", "branch"}},
	{Name: "github__create_repository", Description: "Create a new GitHub repository in your account.", Params: []string{"name", "description", "private", "autoInit"}},
	{Name: "github__push_files", Description: "Push multiple files to a GitHub repository in a single commit.", Params: []string{"owner", "repo", "branch", "files", "message"}},
	{Name: "filesystem__read_file", Title: "Read File", Description: "Read the complete contents of a file from the file system. Handles various text encodings and provides detailed error messages if the file cannot be read.", Params: []string{"path"}},
	{Name: "filesystem__write_file", Title: "Write File", Description: "Create a new file or completely overwrite an existing file with new content.", Params: []string{"path", "content"}},
	{Name: "filesystem__list_directory", Title: "List Directory", Description: "Get a detailed listing of all files and directories in a specified path. Results clearly distinguish between files and directories with [FILE] and [DIR] prefixes.", Params: []string{"path"}},
	{Name: "filesystem__create_directory", Title: "Create Directory", Description: "Create a new directory or ensure a directory exists.", Params: []string{"path"}},
	{Name: "filesystem__move_file", Title: "Move File", Description: "Move or rename files and directories.", Params: []string{"source", "destination"}},
	{Name: "filesystem__search_files", Title: "Search Files", Description: "Recursively search for files and directories matching a pattern.", Params: []string{"path", "pattern", "excludePatterns"}},
	{Name: "filesystem__get_file_info", Title: "Get File Info", Description: "Retrieve detailed metadata about a file or directory, including size, creation time, last modified time, permissions, and type.", Params: []string{"path"}},
	{Name: "memory__create_entities", Description: "Create multiple new entities in the knowledge graph.", Params: []string{"entities"}},
	{Name: "memory__create_relations", Description: "Create multiple new relations between entities in the knowledge graph. Relations should be in active voice.", Params: []string{"relations"}},
	{Name: "memory__read_graph", Description: "Read the entire knowledge graph."},
	{Name: "memory__search_nodes", Description: "Search for nodes in the knowledge graph based on a query.", Params: []string{"query"}},
	{Name: "memory__delete_entities", Description: "Delete multiple entities and their associated relations from the knowledge graph.", Params: []string{"entityNames"}},
	{Name: "everything__echo", Description: "Echoes back the input.", Params: []string{"message"}},
	{Name: "everything__add", Description: "Adds two numbers.", Params: []string{"a", "b"}},
	{Name: "everything__longRunningOperation", Description: "Demonstrates a long running operation with progress updates.", Params: []string{"duration", "steps"}},
	{Name: "everything__printEnv", Description: "Prints all environment variables, helpful for debugging MCP server configuration."},
	{Name: "everything__getTinyImage", Description: "Returns the MCP_TINY_IMAGE."},
}

var toolIndex = New(tools)

// names gives the tool names of results, for readable failures.
func names(rs []Result) []string {
	var out []string
	for _, r := range rs {
		out = append(out, fmt.Sprintf("%s(%.2f)", tools[r.Doc].Name, r.Score))
	}
	return out
}

func TestTerms(t *testing.T) {
	for _, tt := range []struct {
		text string
		want []string
	}{
		{"createIssue", []string{"creat", "issu"}},
		{"get_file_contents", []string{"get", "fil", "content"}},
		{"HTTPServer", []string{"http", "server"}},
		{"listIDs of URLsFor", []string{"list", "id", "url"}},
		{"v2Api base64", []string{"v", "2", "api", "bas", "64"}},
		{"The file, and the path!", []string{"fil", "path"}},
		{"entries running getting added mapped filling", []string{"entry", "run", "get", "add", "map", "fill"}},
		{"string thing need speed", []string{"string", "thing", "need", "speed"}},
		{"ÉtatCivil naïve", []string{"état", "civil", "naïv"}},
		{"", nil},
		{"the of and -- __", nil},
	} {
		if got := Terms(tt.text); !slices.Equal(got, tt.want) {
			t.Errorf("Terms(%q) = %q; want %q", tt.text, got, tt.want)
		}
	}
}

func TestStemsMeet(t *testing.T) {
	for _, group := range [][]string{
		{"issue", "issues", "Issue"},
		{"file", "files", "filing"},
		{"create", "creates", "created", "creating"},
		{"update", "updates", "updated", "updating"},
		{"repository", "repositories"},
		{"status", "statuses"},
		{"process", "processes", "processed", "processing"},
		{"address", "addresses", "addressed"},
		{"search", "searches", "searched", "searching"},
		{"commit", "commits", "committed", "committing"},
		{"list", "lists", "listing", "listed"},
	} {
		want := Terms(group[0])
		for _, w := range group[1:] {
			if got := Terms(w); !slices.Equal(got, want) {
				t.Errorf("Terms(%q) = %q; want %q like %q", w, got, want, group[0])
			}
		}
	}
	// Words that merely end in s are not cut down to something else.
	for _, w := range []string{"status", "process", "address", "analysis", "access"} {
		if got := Terms(w); !slices.Equal(got, []string{w}) {
			t.Errorf("Terms(%q) = %q; want it whole", w, got)
		}
	}
}

func TestStemmedWordsMatch(t *testing.T) {
	x := New([]Doc{
		{Name: "ci__get_status", Description: "Get the status of a build."},
		{Name: "ci__list_processes", Description: "List running processes."},
		{Name: "net__lookup", Description: "Look up the addresses of a host.", Params: []string{"hostAddress"}},
		{Name: "gh__issue", Description: "Open an issue."},
	})
	for _, tt := range []struct {
		query string
		want  int
	}{{"statuses", 0}, {"status", 0}, {"process", 1}, {"processing", 1}, {"address", 2}, {"addresses", 2}, {"issues", 3}} {
		rs := x.Search(tt.query, 10)
		if len(rs) != 1 || rs[0].Doc != tt.want {
			t.Errorf("Search(%q) = %v; want only doc %d", tt.query, rs, tt.want)
		}
	}
}

func TestSearchTopResult(t *testing.T) {
	for _, tt := range []struct{ query, want string }{
		{"create issue", "github__create_issue"},
		{"create github issue", "github__create_issue"},
		{"read a file", "filesystem__read_file"},
		{"list directory", "filesystem__list_directory"},
		{"add two numbers", "everything__add"},
		{"knowledge graph entities", "memory__create_entities"},
		{"list issues", "github__list_issues"},
		{"creating issues", "github__create_issue"},
		{"comment on an issue", "github__add_issue_comment"},
		{"pull request", "github__create_pull_request"},
		{"rename file", "filesystem__move_file"},
		{"environment variables", "everything__printEnv"},
		{"file metadata permissions", "filesystem__get_file_info"},
		{"search repo", "github__search_repositories"},
		{"issueNumber", "github__get_issue"},
	} {
		rs := toolIndex.Search(tt.query, 5)
		if len(rs) == 0 || tools[rs[0].Doc].Name != tt.want {
			t.Errorf("Search(%q) = %v; want %s first", tt.query, names(rs), tt.want)
		}
	}
}

func TestPrefixMatch(t *testing.T) {
	x := New([]Doc{
		{Name: "a__tool", Description: "Works on a repository."},
		{Name: "b__tool", Description: "Works on a repo."},
		{Name: "c__tool", Description: "Shows the weather."},
	})
	rs := x.Search("repo", 10)
	if len(rs) != 2 || rs[0].Doc != 1 || rs[1].Doc != 0 {
		t.Fatalf("Search(repo) = %v; want the exact match 1, then the prefix match 0", rs)
	}
	if ratio := rs[1].Score / rs[0].Score; ratio < 0.49 || ratio > 0.51 {
		t.Errorf("prefix/exact score ratio = %.3f; want %.1f", ratio, prefixDiscount)
	}
	// Two-letter query terms match only exactly.
	if rs := x.Search("re", 10); rs != nil {
		t.Errorf("Search(re) = %v; want nil", rs)
	}

	// In the catalog, "repo" reaches tools that never say "repo" itself.
	var got []string
	for _, r := range toolIndex.Search("repo", 100) {
		got = append(got, tools[r.Doc].Name)
	}
	for _, want := range []string{"github__search_repositories", "github__create_repository"} {
		if !slices.Contains(got, want) {
			t.Errorf("Search(repo) = %v; want it to include %s", got, want)
		}
	}
}

func TestPrefixCountsOncePerTerm(t *testing.T) {
	x := New([]Doc{
		{Name: "a__tool", Description: "Repository report."},
		{Name: "b__tool", Description: "Weather."},
	})
	score := func(query string) float64 {
		rs := x.Search(query, 10)
		if len(rs) != 1 || rs[0].Doc != 0 {
			t.Fatalf("Search(%q) = %v; want doc 0 alone", query, rs)
		}
		return rs[0].Score
	}
	// "repo" is a prefix of both terms; the better one counts, not their sum.
	want := prefixDiscount * max(score("repository"), score("report"))
	if got := score("repo"); got != want {
		t.Errorf("Search(repo) scored %v; want %v", got, want)
	}
}

func TestMoreDistinctTermsWin(t *testing.T) {
	x := New([]Doc{
		{Name: "a__tool", Description: "Issue, issue, issue: everything about an issue and its issue history."},
		{Name: "b__tool", Description: "Create an issue."},
		{Name: "c__tool", Description: "Create a branch."},
		{Name: "d__tool", Description: "Delete a branch."},
	})
	rs := x.Search("create issue", 10)
	if len(rs) != 3 || rs[0].Doc != 1 {
		t.Errorf("Search(create issue) = %v; want doc 1, matching both terms, first", rs)
	}
}

func TestNoMatch(t *testing.T) {
	for _, q := range []string{"xylophone", "", "   ", "the of and", "--"} {
		if rs := toolIndex.Search(q, 10); rs != nil {
			t.Errorf("Search(%q) = %v; want nil", q, names(rs))
		}
	}
	if rs := New(nil).Search("file", 10); rs != nil {
		t.Errorf("empty index: Search = %v; want nil", rs)
	}
	if rs := toolIndex.Search("file", 0); rs != nil {
		t.Errorf("Search with limit 0 = %v; want nil", rs)
	}
}

func TestLimit(t *testing.T) {
	all := toolIndex.Search("file", 100)
	if len(all) < 5 {
		t.Fatalf("Search(file) matched %d tools; want at least 5", len(all))
	}
	for limit := 1; limit <= len(all)+1; limit++ {
		got := toolIndex.Search("file", limit)
		if len(got) != min(limit, len(all)) || !slices.Equal(got, all[:len(got)]) {
			t.Errorf("Search(file, %d) = %v; want the first %d of %v", limit, got, limit, all)
		}
	}
}

func TestTiesByDocOrder(t *testing.T) {
	doc := Doc{Name: "x__fetch_page", Description: "Fetch a web page."}
	x := New([]Doc{{Name: "y__other", Description: "Unrelated."}, doc, doc, doc})
	rs := x.Search("fetch page", 10)
	if len(rs) != 3 {
		t.Fatalf("Search = %v; want 3 results", rs)
	}
	for i, r := range rs {
		if r.Doc != i+1 || r.Score != rs[0].Score {
			t.Errorf("result %d = %v; want doc %d with score %v", i, r, i+1, rs[0].Score)
		}
	}
}

func TestConcurrentSearch(t *testing.T) {
	queries := []string{"create issue", "read a file", "list directory", "repo", "knowledge graph"}
	want := make([][]Result, len(queries))
	for i, q := range queries {
		want[i] = toolIndex.Search(q, 10)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for n := range 50 {
				i := (g + n) % len(queries)
				if got := toolIndex.Search(queries[i], 10); !slices.Equal(got, want[i]) {
					t.Errorf("concurrent Search(%q) = %v; want %v", queries[i], got, want[i])
					return
				}
			}
		})
	}
	wg.Wait()
}

// syntheticDocs builds n tools from a fixed vocabulary, deterministically.
func syntheticDocs(n int) []Doc {
	verbs := []string{"get", "list", "create", "update", "delete", "search", "read", "write", "move", "sync"}
	nouns := []string{"issue", "file", "repository", "branch", "commit", "user", "team", "project", "entity", "page", "record", "ticket", "channel", "message", "invoice"}
	servers := []string{"github", "gitlab", "jira", "slack", "notion", "stripe", "linear", "filesystem"}
	filler := strings.Fields("returns detailed information about the given item including metadata owners timestamps and links to related resources in the remote service")
	r := rand.New(rand.NewPCG(1, 2))
	pick := func(s []string) string { return s[r.IntN(len(s))] }
	docs := make([]Doc, n)
	for i := range docs {
		verb, noun := pick(verbs), pick(nouns)
		desc := []string{strings.ToUpper(verb[:1]) + verb[1:], "a", noun, "in", pick(servers) + "."}
		for range 8 + r.IntN(16) {
			desc = append(desc, pick(filler))
		}
		docs[i] = Doc{
			Name:        fmt.Sprintf("%s__%s_%s_%d", pick(servers), verb, noun, i),
			Description: strings.Join(desc, " "),
			Params:      []string{noun + "Id", "owner", pick(nouns) + "_name", "page"},
		}
	}
	return docs
}

func BenchmarkSearch(b *testing.B) {
	x := New(syntheticDocs(2000))
	queries := []string{"create github issue", "read file", "list repo branches", "delete slack message", "invoice"}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		x.Search(queries[i%len(queries)], 10)
	}
}

func BenchmarkNew(b *testing.B) {
	docs := syntheticDocs(2000)
	b.ReportAllocs()
	for b.Loop() {
		New(docs)
	}
}

// TestMoreWordsMatchedRankFirst: a tool matching two of a query's words in
// its description outranks one matching a single word in its name.
func TestMoreWordsMatchedRankFirst(t *testing.T) {
	x := New([]Doc{
		{Name: "memory__add_observations", Description: "Add new observations to existing entities in the knowledge graph", Params: []string{"observations"}},
		{Name: "everything__get-sum", Description: "Returns the sum of two numbers", Params: []string{"a", "b"}},
	})
	if got := x.Search("add two numbers", 2); len(got) != 2 || got[0].Doc != 1 {
		t.Errorf("add two numbers: %+v, want get-sum first", got)
	}
}
