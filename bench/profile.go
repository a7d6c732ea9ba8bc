package bench

import (
	"fmt"
	"path/filepath"

	"github.com/pkg/profile"
)

// ProfileKinds are the profiles StartProfile takes.
var profileModes = map[string]func(*profile.Profile){
	"cpu":   profile.CPUProfile,
	"mem":   profile.MemProfile,
	"block": profile.BlockProfile,
	"mutex": profile.MutexProfile,
	"trace": profile.TraceProfile, // go tool trace: scheduling, GC, blocking
}

// CheckProfileKind reports whether kind is "" (none) or one StartProfile takes.
func CheckProfileKind(kind string) error {
	if _, ok := profileModes[kind]; kind != "" && !ok {
		return fmt.Errorf("bench: profile %q: want cpu, mem, block, mutex or trace", kind)
	}
	return nil
}

// StartProfile starts a profile of kind ("" = none) written to
// dir/<kind>.pprof (trace: dir/trace.out, for go tool trace) when the
// returned stop runs. One profile at a time.
func StartProfile(kind, dir string) (stop func() string, err error) {
	if err := CheckProfileKind(kind); err != nil {
		return nil, err
	}
	if kind == "" {
		return func() string { return "" }, nil
	}
	if dir == "" {
		dir = "."
	}
	p := profile.Start(profileModes[kind], profile.ProfilePath(dir), profile.NoShutdownHook, profile.Quiet)
	return func() string {
		p.Stop()
		if kind == "trace" {
			return filepath.Join(dir, "trace.out")
		}
		return filepath.Join(dir, kind+".pprof")
	}, nil
}
