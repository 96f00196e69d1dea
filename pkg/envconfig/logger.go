package envconfig

import (
	"io"
	"log/slog"
	"strings"
)

// Logger is the logger BAROMETER_LOG_LEVEL and BAROMETER_LOG_FORMAT
// describe, writing to w. JSON lines give durations in seconds (a
// number), as /scale and the metrics do, rather than slog's nanoseconds.
func (c Config) Logger(w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(c.LogLevel)) // one of oneof's, checked by Load
	opts := &slog.HandlerOptions{Level: level}
	if strings.EqualFold(c.LogFormat, "json") {
		opts.ReplaceAttr = durationsInSeconds
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

func durationsInSeconds(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		a.Value = slog.Float64Value(a.Value.Duration().Seconds())
	}
	return a
}
