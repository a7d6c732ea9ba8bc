package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Version is the release; the build can override it with -ldflags -X.
var Version = "0.1.0-dev"

func init() {
	register(command{name: "version", summary: "print the version and build", run: func(args []string) error {
		fs := newFlagSet("version", "", "The release, the commit it was built from, and the Go version.")
		if err := parseArgs(fs, args); err != nil {
			return err
		}
		if err := refuseArgs(fs); err != nil {
			return err
		}
		rev := "unknown"
		if bi, ok := debug.ReadBuildInfo(); ok {
			for _, s := range bi.Settings {
				if s.Key == "vcs.revision" {
					rev = s.Value
				}
			}
		}
		fmt.Printf("samsa %s (commit %s, %s)\n", Version, rev, runtime.Version())
		return nil
	}})
}
