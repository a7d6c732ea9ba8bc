package storage

import (
	"flag"
	"io"
	"log/slog"
	"os"
)

var verbose = flag.Bool("storage.log", false, "show the store's logs in tests")

func quietLogger() *slog.Logger {
	if *verbose {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}
