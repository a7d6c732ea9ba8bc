// Package lab is the lab's one experiment pipeline. Every experiment
// file, whatever its kind, goes the same way, load → machine → run →
// result file → report → gate:
//
//  1. load: the file's "kind" picks its Kind in a Kinds registry, which
//     reads and checks the file (Kind.Load);
//  2. machine: the run's data dir is made and the machine and its disk
//     recorded there (resultfile.CollectMachine), before the run, which
//     may outlive the checkout it was built from;
//  3. run: Experiment.Run, with the command line's Env (quick, seed, data
//     dir, the samsa binary);
//  4. result file: the command and the machine go into the result's
//     resultfile.Header, and the file is written as
//     <out>/<experiment>/<host>-<start>.json;
//  5. report: the result prints itself, and, when asked, rewrites its
//     PERFORMANCE.md section (its tables, charts, the machine and the
//     result file);
//  6. gate: the result's Verdict names the targets it missed; with the
//     gate on, a miss is the run's error (exit status 1).
//
// Kinds.Run and RunExperiment are the pipeline; Kinds.Report renders
// result files already written (samsa bench report) through the same
// kinds, and WriteHTML a rendered section as a static page.
//
// A kind's package makes its Kind with NewKind (its experiment loader, its
// runner and its result type) and gives its result a Verdict; a result
// that prints or renders more than its Markdown implements Printer or
// Sectioner. Runs share Progressf, Indent, Sleep, Repeat and Median. The
// registry
// itself is built where the kinds' dependencies are at hand (cmd/samsa:
// the embedded clusters, the driver factory). Nothing in this package
// keeps state; a pipeline run owns what it starts until it returns.
package lab
