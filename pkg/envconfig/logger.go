package envconfig

import (
	"io"
	"log/slog"
	"strings"
)

// Logger is the logger BAROMETER_LOG_LEVEL and BAROMETER_LOG_FORMAT
// describe, writing to w.
func (c Config) Logger(w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(c.LogLevel)) // one of oneof's, checked by Load
	opts := &slog.HandlerOptions{Level: level}
	if strings.EqualFold(c.LogFormat, "json") {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
