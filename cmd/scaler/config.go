package main

import (
	"io"
	"log/slog"
	"strings"

	"github.com/barometer-scaler/barometer/pkg/envconfig"
)

// config is the server's configuration, read from the environment
// (pkg/envconfig declares each variable).
type config = envconfig.Config

func newLogger(cfg config, w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.LogLevel)) // checked by envconfig
	opts := &slog.HandlerOptions{Level: level}
	if strings.EqualFold(cfg.LogFormat, "json") {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
