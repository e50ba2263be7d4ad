package termtext

// Plural picks the word for n things: one when n is 1, else many
// ("is"/"are", "it"/"them"), for sentences HowMany's "n nouns" does not
// fit.
func Plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
