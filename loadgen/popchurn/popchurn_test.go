package popchurn

import (
	"context"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/samsamq/samsa/devcluster"
	"github.com/samsamq/samsa/internal/resultfile"
)

type devTarget struct{ dev *devcluster.Cluster }

func (t devTarget) NamesrvAddr() string { return t.dev.NamesrvAddr() }
func (t devTarget) Close() error        { return t.dev.Close() }

// A small POP run: two members, a second of churn at a time; nothing is
// lost and every figure is filled in. The members are samsa processes:
// the test runs where make test hands it the binary ($SAMSA_BIN).
func TestSmallRun(t *testing.T) {
	bin := os.Getenv("SAMSA_BIN")
	if bin == "" || testing.Short() {
		t.Skip("needs $SAMSA_BIN (make test sets it)")
	}
	e := &Experiment{Spec: resultfile.Spec{Name: "pop-vs-push", Kind: Kind}}
	e.Base = Settings{Modes: []string{"pop"}, Queues: 2, Steps: []int{1, 2}, StepTime: resultfile.Duration(time.Second),
		Rate: 200, Churn: resultfile.Duration(4 * time.Second), ChurnEvery: resultfile.Duration(time.Second),
		StopFor: resultfile.Duration(2 * time.Second), Invisible: resultfile.Duration(time.Second), Drain: resultfile.Duration(time.Minute)}
	res, err := RunExperiment(context.Background(), e, Options{Binary: bin, Seed: 1, NewTarget: func(context.Context) (Target, error) {
		dev, err := devcluster.Start(devcluster.Options{Dir: t.TempDir(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			return nil, err
		}
		return devTarget{dev}, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	m := res.Modes[0]
	if m.Lost != 0 || m.Sent == 0 || m.Delivered != m.Sent || len(m.Steps) != 2 {
		t.Fatalf("%+v", m)
	}
	if v := res.Verdict(); v.Err != nil {
		t.Fatal(v.Err)
	}
	t.Logf("\n%s", res.Markdown())
}
