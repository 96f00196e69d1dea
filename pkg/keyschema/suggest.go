package keyschema

import "strings"

// maxSuggestLen bounds the keys a suggestion is looked for: a key longer
// than any declared one by this much is no typo, and the distance costs
// the product of the lengths.
const maxSuggestLen = 64

// nearest is the known key closest to key by edit distance, ignoring
// case, when it is close enough to be a slip (a third of the key's length,
// at least one edit): "sorce" gives "source", "TargetPressure"
// "targetPressure". known is sorted, so a tie goes to the first.
func nearest(key string, known []string) (string, bool) {
	if len(key) > maxSuggestLen {
		return "", false
	}
	limit := max(1, len(key)/3)
	best, bestDist := "", limit+1
	lower := strings.ToLower(key)
	for _, k := range known {
		if d := len(k) - len(key); d > limit || -d > limit {
			continue // the distance is at least the difference in length
		}
		if d := editDistance(lower, strings.ToLower(k)); d < bestDist {
			best, bestDist = k, d
		}
	}
	return best, best != ""
}

// editDistance is the optimal string alignment distance between a and b
// (bytes): the insertions, deletions, substitutions and swaps of two
// adjacent bytes that turn one into the other, no substring edited twice.
// Keys are ASCII; a swap is the commonest typo after a missed letter.
func editDistance(a, b string) int {
	// prev2, prev and cur are rows i-2, i-1 and i of the usual table.
	prev2, prev, cur := make([]int, len(b)+1), make([]int, len(b)+1), make([]int, len(b)+1)
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
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
