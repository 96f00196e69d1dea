package keyschema

import (
	"fmt"
	"strconv"
	"unicode/utf8"
)

// MetadataError is invalid trigger metadata: it names the key and says what
// is allowed. Surfaces map it to InvalidArgument.
type MetadataError struct {
	Key     string
	Value   string
	Allowed string
}

// maxQuoted bounds how much of a bad value an error repeats: enough to
// recognise it, never so much that a huge value floods KEDA's logs.
const maxQuoted = 64

func (e *MetadataError) Error() string {
	if e.Value == "" {
		return fmt.Sprintf("metadata key %s: %s", Quote(e.Key), e.Allowed)
	}
	return fmt.Sprintf("metadata key %s: invalid value %s: %s", Quote(e.Key), Quote(e.Value), e.Allowed)
}

// Quote is s quoted and escaped, cut to a short prefix (marked "...") when
// it is long: what an error may repeat of a value it refuses.
func Quote(s string) string {
	if len(s) <= maxQuoted {
		return strconv.Quote(s)
	}
	cut := maxQuoted
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]) + fmt.Sprintf("... (%d bytes)", len(s))
}
