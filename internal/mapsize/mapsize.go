// Package mapsize gives back the memory of a map that has lost most of
// its entries. A Go map keeps the memory of the most it ever held, so a
// flood of targets or ScaledObjects would otherwise stay allocated long
// after they are gone.
package mapsize

// minPeak is the smallest peak worth a copy: a map built for fewer
// entries holds a few KiB at most.
const minPeak = 64

// Shrunk returns m, or a copy of it in a map of its own size when it holds
// less than a quarter of *peak entries (and that was at least minPeak).
// *peak is the size m's memory is for: it is raised to len(m), and set to
// the copy's size when m is copied, so a map that keeps falling is copied
// again at each quarter, down to minPeak. Copying only after a fall that
// large keeps a steady map from being copied at every deletion, and the
// copies of a fall cost a third of the entries removed.
func Shrunk[K comparable, V any](m map[K]V, peak *int) map[K]V {
	*peak = max(*peak, len(m))
	if *peak < minPeak || len(m) >= *peak/4 {
		return m
	}
	out := make(map[K]V, len(m))
	for k, v := range m {
		out[k] = v
	}
	*peak = len(out)
	return out
}
