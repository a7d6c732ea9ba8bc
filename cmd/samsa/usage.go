package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
)

// newFlagSet is a command's flag set with the one usage format every
// command shares:
//
//	usage: samsa NAME [flags] SYNOPSIS
//
//	ABOUT
//
//	flags:
//	  -flag ...
//
// Parse errors are returned, not printed (main prints them once, with a
// pointer to -h); -h and --help print the usage to stdout and the command
// ends with success (main treats flag.ErrHelp so).
func newFlagSet(name, synopsis, about string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	// The flag package calls Usage on -h and on every parse error; the
	// usage is printed by parseArgs, for -h only.
	fs.Usage = func() {}
	usageMu.Lock()
	usages[fs] = func(w io.Writer) { printUsage(w, fs, synopsis, about) }
	usageMu.Unlock()
	return fs
}

var (
	usageMu sync.Mutex
	// usages are the usage printers of the flag sets newFlagSet made.
	usages = map[*flag.FlagSet]func(io.Writer){}
)

// usageError is a complaint about a command line, from the flag package:
// main points at the command's help.
type usageError struct {
	cmd string // "topic create"
	err error
}

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// parseArgs parses args with fs: on -h it prints fs's usage to stdout and
// returns flag.ErrHelp; a parse error comes back as a *usageError.
func parseArgs(fs *flag.FlagSet, args []string) error {
	err := fs.Parse(args)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, flag.ErrHelp):
		usageMu.Lock()
		u := usages[fs]
		usageMu.Unlock()
		if u != nil { // else the flag package printed fs's own usage
			u(os.Stdout)
		}
		return flag.ErrHelp
	}
	return &usageError{cmd: fs.Name(), err: err}
}

// printUsage writes fs's usage in the shared format; best effort, as
// fs.PrintDefaults is (a usage that cannot be written has nowhere to go).
func printUsage(w io.Writer, fs *flag.FlagSet, synopsis, about string) {
	line := "usage: samsa " + fs.Name() + " [flags]"
	if synopsis != "" {
		line += " " + synopsis
	}
	_, _ = fmt.Fprintln(w, line)
	if about != "" {
		_, _ = fmt.Fprintf(w, "\n%s\n", strings.TrimRight(about, "\n"))
	}
	_, _ = fmt.Fprintf(w, "\nflags:\n")
	out := fs.Output()
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(out)
}

// subcommand is one subcommand of a command that has them (topic, group,
// dlq): its name, a line for the usage, and what runs it.
type subcommand struct {
	name, summary string
	run           func(args []string) error
}

// runSubcommand runs the subcommand args[0] names, or prints the usage:
// to stdout for help, to stderr with an error when args name none or an
// unknown one.
func runSubcommand(cmd string, subs []subcommand, args []string) error {
	if len(args) == 0 {
		subUsage(os.Stderr, cmd, subs)
		return errors.New("a subcommand is required")
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		subUsage(os.Stdout, cmd, subs)
		return nil
	}
	for _, s := range subs {
		if s.name == args[0] {
			return s.run(args[1:])
		}
	}
	subUsage(os.Stderr, cmd, subs)
	return fmt.Errorf("unknown %s subcommand %q", cmd, args[0])
}

// subUsage writes a command-with-subcommands' usage to w: its
// subcommands, one line each. Best effort, as printUsage.
func subUsage(w io.Writer, name string, subs []subcommand) {
	names := make([]string, len(subs))
	for i, s := range subs {
		names[i] = s.name
	}
	_, _ = fmt.Fprintf(w, "usage: samsa %s <%s> [flags] [ARGS]\n\nsubcommands:\n", name, strings.Join(names, "|"))
	for _, s := range subs {
		_, _ = fmt.Fprintf(w, "  %-14s %s\n", s.name, s.summary)
	}
	_, _ = fmt.Fprintf(w, "\nRun 'samsa %s <subcommand> -h' for a subcommand's flags.\n", name)
}

// wantsHelp reports whether args ask for help: -h, -help or --help
// among the flags (before a "--"), or "help" as the first argument.
func wantsHelp(args []string) bool {
	if len(args) > 0 && args[0] == "help" {
		return true
	}
	end := slices.Index(args, "--")
	if end < 0 {
		end = len(args)
	}
	return slices.ContainsFunc(args[:end], func(a string) bool { return a == "-h" || a == "-help" || a == "--help" })
}

// refuseArgs is a server command's check that nothing but flags was given.
func refuseArgs(fs *flag.FlagSet) error {
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q: this command takes flags only (samsa %s -h lists them)", fs.Args(), fs.Name())
	}
	return nil
}
