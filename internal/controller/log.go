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

// NewLogger returns a logr.Logger writing JSON lines to w at level. logr's
// V(1) is slog's debug level.
func NewLogger(w io.Writer, level string) (logr.Logger, error) {
	l, err := parseLevel(level)
	if err != nil {
		return logr.Logger{}, err
	}
	h := slog.NewJSONHandler(w, &slog.HandlerOptions{Level: l})
	return logr.FromSlogHandler(h), nil
}
