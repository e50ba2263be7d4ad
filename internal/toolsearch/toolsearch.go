// Package toolsearch ranks MCP tools for a free-text query, for mcphub's search
// mode: a client sees a search tool instead of hundreds of tools, and the model
// finds the one it needs with a query such as "create github issue".
//
// Each tool is scored with BM25 over four weighted fields: its name, title,
// parameter names and description. Query terms also match longer document
// terms they are a prefix of, at a discount.
package toolsearch

import (
	"math"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// BM25 parameters and matching rules.
const (
	k1             = 1.2
	b              = 0.75
	prefixDiscount = 0.5 // a prefix match scores this fraction of an exact one
	minPrefixRunes = 3   // shorter query terms match exactly only
)

// The fields of a Doc, in the order fieldWeights lists their weights.
const (
	fieldName = iota
	fieldTitle
	fieldParams
	fieldDescription
	numFields
)

var fieldWeights = [numFields]float64{3, 2, 1.5, 1}

// stopwords are dropped from documents and queries alike. Each of them is its
// own stem, so Terms can test the stem alone.
var stopwords = map[string]bool{
	"the": true, "a": true, "an": true, "of": true, "to": true, "for": true,
	"and": true, "or": true, "in": true, "on": true, "with": true, "by": true,
	"is": true, "it": true, "this": true, "that": true, "from": true,
}

// Doc is one tool as the search sees it.
type Doc struct {
	Name        string   // the exposed tool name, e.g. github__create_issue
	Title       string   // may be empty
	Description string   // the tool's description
	Params      []string // parameter names of its input schema
}

// Index is an immutable index over docs; it is safe for concurrent Search.
type Index struct {
	docs     int         // the number of docs
	terms    []string    // the vocabulary, sorted, so that prefixes form a range
	postings [][]posting // postings[i] lists the docs holding terms[i], in doc order
}

// posting is one doc holding a term, with the term's BM25 score in that doc.
type posting struct {
	doc   int
	score float64
}

// Result is one match: the doc's index in the slice given to New and its
// score, where higher is better.
type Result struct {
	Doc   int
	Score float64
}

// New indexes docs. The index keeps no reference to the slice.
func New(docs []Doc) *Index {
	fields := make([][numFields][]string, len(docs))
	var avgLen [numFields]float64
	for i, d := range docs {
		fields[i] = [numFields][]string{
			fieldName:        Terms(d.Name),
			fieldTitle:       Terms(d.Title),
			fieldParams:      Terms(strings.Join(d.Params, " ")),
			fieldDescription: Terms(d.Description),
		}
		for f, terms := range fields[i] {
			avgLen[f] += float64(len(terms)) / float64(len(docs))
		}
	}

	type count struct {
		doc int
		tf  [numFields]int
	}
	counts := make(map[string][]count)
	for i := range fields {
		for f, terms := range fields[i] {
			for _, t := range terms {
				cs := counts[t]
				if len(cs) == 0 || cs[len(cs)-1].doc != i {
					cs = append(cs, count{doc: i})
				}
				cs[len(cs)-1].tf[f]++
				counts[t] = cs
			}
		}
	}

	x := &Index{docs: len(docs), terms: make([]string, 0, len(counts))}
	for t := range counts {
		x.terms = append(x.terms, t)
	}
	slices.Sort(x.terms)
	n := float64(len(docs))
	for _, t := range x.terms {
		cs := counts[t]
		df := float64(len(cs))
		idf := math.Log(1 + (n-df+0.5)/(df+0.5))
		ps := make([]posting, len(cs))
		for j, c := range cs {
			var s float64
			for f, tf := range c.tf {
				if tf == 0 {
					continue
				}
				norm := 1 - b + b*float64(len(fields[c.doc][f]))/avgLen[f]
				s += fieldWeights[f] * float64(tf) * (k1 + 1) / (float64(tf) + k1*norm)
			}
			ps[j] = posting{doc: c.doc, score: idf * s}
		}
		x.postings = append(x.postings, ps)
	}
	return x
}

// Search returns up to limit matches, best first, with ties broken by doc
// order. A doc matches when it holds at least one query term, exactly or as a
// prefix. An empty or all-stopword query, or a limit below one, returns nil.
func (x *Index) Search(query string, limit int) []Result {
	if limit < 1 {
		return nil
	}
	total := make([]float64, x.docs)
	matched := make([]int, x.docs)  // distinct query terms each doc matches
	best := make([]float64, x.docs) // a doc counts each query term once, by its best match
	terms := Terms(query)
	slices.Sort(terms)
	terms = slices.Compact(terms)
	for _, q := range terms {
		prefixOK := utf8.RuneCountInString(q) >= minPrefixRunes && !isDigit(q)
		clear(best)
		i, _ := slices.BinarySearch(x.terms, q)
		for ; i < len(x.terms) && strings.HasPrefix(x.terms[i], q); i++ {
			weight := 1.0
			if x.terms[i] != q {
				if !prefixOK {
					break
				}
				weight = prefixDiscount
			}
			for _, p := range x.postings[i] {
				best[p.doc] = max(best[p.doc], weight*p.score)
			}
		}
		for doc, s := range best {
			total[doc] += s
			if s > 0 {
				matched[doc]++
			}
		}
	}
	// A doc that matches more of the query's words ranks higher than its
	// BM25 sum alone says (a coordination factor, squared: a query is a
	// few words, each of which matters): "add two numbers" finds get-sum,
	// which matches two of them, before add_observations, which matches
	// only "add", in its name.
	var results []Result
	for doc, s := range total {
		if s > 0 {
			coord := float64(matched[doc]) / float64(len(terms))
			results = append(results, Result{Doc: doc, Score: s * coord * coord})
		}
	}
	slices.SortFunc(results, func(a, b Result) int {
		switch {
		case a.Score > b.Score: // scores are never NaN
			return -1
		case a.Score < b.Score:
			return 1
		}
		return a.Doc - b.Doc
	})
	return results[:min(limit, len(results))]
}

// Terms splits text into search terms as the index does: words split at
// anything but letters and digits, at camelCase humps and between letters and
// digits, lowercased, stemmed, with stopwords dropped.
func Terms(text string) []string {
	var terms []string
	for _, w := range words(text) {
		if t := stem(strings.ToLower(w)); !stopwords[t] {
			terms = append(terms, t)
		}
	}
	return terms
}

// Rune classes for splitting words.
const (
	sep = iota
	digit
	upper
	lower
	caseless // letters without case, and combining marks
)

func class(r rune) int {
	switch {
	case unicode.IsDigit(r):
		return digit
	case unicode.IsUpper(r) || unicode.IsTitle(r):
		return upper
	case unicode.IsLower(r):
		return lower
	case unicode.IsLetter(r) || unicode.IsMark(r):
		return caseless
	}
	return sep
}

// words splits text into words. An uppercase run followed by lowercase letters
// ends before its last letter ("HTTPServer" is HTTP, Server), unless the
// lowercase part is a lone plural "s" ("IDs" stays whole).
func words(text string) []string {
	rs := []rune(text)
	cls := make([]int, len(rs)+1) // a trailing sep simplifies look-ahead
	for i, r := range rs {
		cls[i] = class(r)
	}
	var out []string
	start := -1
	for i := range rs {
		prev, cur, next := sep, cls[i], cls[i+1]
		if i > 0 {
			prev = cls[i-1]
		}
		switch {
		case cur == sep:
			if start >= 0 {
				out = append(out, string(rs[start:i]))
			}
			start = -1
			continue
		case start < 0:
			start = i
			continue
		}
		split := (prev == digit) != (cur == digit) ||
			prev == lower && cur == upper ||
			prev == upper && cur == upper && next == lower &&
				!(rs[i+1] == 's' && cls[i+2] != lower)
		if split {
			out = append(out, string(rs[start:i]))
			start = i
		}
	}
	if start >= 0 {
		out = append(out, string(rs[start:]))
	}
	return out
}

// stem strips plural -s/-es/-ies, then -ing/-ed, then a final -e, so that
// "issues" and "issue", or "creating", "created" and "create", share a stem.
// It leaves words ending in -ss, -us and -is ("address", "status") whole, and
// keeps -ing and -ed when too little, or no vowel, would remain ("string").
func stem(w string) string {
	switch {
	case len(w) > 4 && strings.HasSuffix(w, "ies"):
		w = w[:len(w)-3] + "y"
	case len(w) >= 3 && strings.HasSuffix(w, "s") &&
		!strings.HasSuffix(w, "ss") && !strings.HasSuffix(w, "us") && !strings.HasSuffix(w, "is"):
		w = w[:len(w)-1]
	}
	for _, suffix := range []string{"ing", "ed"} {
		base, ok := strings.CutSuffix(w, suffix)
		// "need" and "speed" are no past tenses.
		eed := suffix == "ed" && strings.HasSuffix(base, "e")
		if ok && len(base) >= 3 && strings.ContainsAny(base, "aeiouy") && !eed {
			w = undouble(base)
			break
		}
	}
	if len(w) >= 4 && strings.HasSuffix(w, "e") && !strings.HasSuffix(w, "ee") {
		w = w[:len(w)-1]
	}
	return w
}

// undouble turns a doubled final consonant into a single one ("runn" to
// "run"), except for l, s and z ("fill", "pass") and three-letter bases ("add").
func undouble(w string) string {
	n := len(w)
	if n >= 4 && w[n-1] == w[n-2] && strings.IndexByte("bcdfghjkmnpqrtvwx", w[n-1]) >= 0 {
		return w[:n-1]
	}
	return w
}

func isDigit(term string) bool {
	r, _ := utf8.DecodeRuneInString(term)
	return unicode.IsDigit(r)
}
