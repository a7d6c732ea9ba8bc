package main

import (
	"context"
	"os"
	"testing"

	"github.com/samsamq/samsa/internal/resultfile"
	"github.com/samsamq/samsa/loadgen/metascale"
)

// The metadata-scale experiment on the embedded target, small: every
// window recorded, creates registered incrementally (no full
// registration), lookups and a restart timed, the data removed.
func TestMetadataScaleSmall(t *testing.T) {
	dir := t.TempDir()
	e := &metascale.Experiment{Spec: resultfile.Spec{Name: "metadata-small", Kind: metascale.Kind}}
	e.Base = metascale.Settings{Topics: 300, Window: 100, Clients: 4, Lookups: 50}
	res, err := metascale.RunExperiment(context.Background(), e, metascale.Options{
		NewTarget: func(context.Context) (metascale.Target, error) { return newMetaTarget(dir) }})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Windows) != 3 || res.FirstRate <= 0 || res.LastRate <= 0 || res.RestartSeconds <= 0 || res.LookupP99Us <= 0 {
		t.Fatalf("result %+v", res)
	}
	for _, w := range res.Windows {
		if w.FullRegistration != 0 || w.RegisterBytes <= 0 || w.RegisterBytes > 1024 {
			t.Fatalf("window %+v: want incremental registrations only, under 1 KiB a topic", w)
		}
	}
	if o := res.Official; o == nil || o.Listed < 301 || o.Sends != 20 {
		t.Fatalf("the official client's phase: %+v", o)
	}
	if md := res.Markdown(); md == "" {
		t.Fatal("no markdown")
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 0 {
		t.Fatalf("data left: %v %v", entries, err)
	}
}
