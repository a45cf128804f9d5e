package controller

import (
	"fmt"
	"io"
	"log/slog"

	"github.com/go-logr/logr"
)

// parseLevel maps --log-level to a slog level.
func parseLevel(s string) (slog.Level, error) {
	switch s {
	case "debug":
		return slog.LevelDebug, nil
	case "info", "":
		return slog.LevelInfo, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, fmt.Errorf("%w: --log-level %q: use debug, info or error", ErrFlags, s)
}

// NewLogger returns a logr.Logger writing to w at level, one JSON object
// a line (format "json") or key=value lines ("text"). logr's V(1) is
// slog's debug level.
func NewLogger(w io.Writer, level, format string) (logr.Logger, error) {
	l, err := parseLevel(level)
	if err != nil {
		return logr.Logger{}, err
	}
	opts := &slog.HandlerOptions{Level: l}
	switch format {
	case "json", "":
		return logr.FromSlogHandler(slog.NewJSONHandler(w, opts)), nil
	case "text":
		return logr.FromSlogHandler(slog.NewTextHandler(w, opts)), nil
	}
	return logr.Logger{}, fmt.Errorf("%w: --log-format %q: use json or text", ErrFlags, format)
}
