package yamlpos

import "strings"

// Suggest returns the candidate closest to word when it is a plausible
// misspelling (edit distance at most 2, and less than half the word), else "".
func Suggest(word string, candidates []string) string {
	best, bestDist := "", 3
	w := strings.ToLower(word)
	for _, c := range candidates {
		d := distance(w, strings.ToLower(c))
		if d < bestDist && d*2 <= len(c) {
			best, bestDist = c, d
		}
	}
	return best
}

// Quoted lists values as "a", "b", "c" for error messages.
func Quoted(values []string) string {
	q := make([]string, len(values))
	for i, v := range values {
		q[i] = `"` + v + `"`
	}
	return strings.Join(q, ", ")
}

// distance is the Levenshtein distance between a and b.
func distance(a, b string) int {
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
