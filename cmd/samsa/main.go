// Command samsa is the one binary of Samsa: name server, broker, dev cluster,
// client tools, storage lab and load generator, as subcommands. This package
// is wiring only: flags → Options → a library call. Each subcommand lives in a
// file of its own (cmd_<name>.go) and registers itself in init.
//
// Conventions, the same for every command: -h, --help, "samsa help
// COMMAND" and "samsa COMMAND help" print the usage to stdout and exit 0;
// an error goes to stderr with exit status 1 (2 for a usage error, 130
// for a one-shot command interrupted); client
// commands take the name servers from -n / --namesrv or $NAMESRV_ADDR, as
// RocketMQ's tools do, and stop cleanly on SIGINT or SIGTERM.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// command is one subcommand: run gets the arguments after its name.
type command struct {
	name    string
	summary string
	run     func(args []string) error
}

var commands = map[string]command{}

func register(c command) {
	if _, dup := commands[c.name]; dup {
		panic("samsa: duplicate command " + c.name)
	}
	commands[c.name] = c
}

// usage writes the command list to w; best effort, as flag's usage output
// is (a usage that cannot be written has nowhere to go).
func usage(w io.Writer) {
	_, _ = fmt.Fprintf(w, "usage: samsa <command> [flags] [ARGS]\n\ncommands:\n")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		_, _ = fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
	_, _ = fmt.Fprintf(w, "\nRun 'samsa help <command>' or 'samsa <command> -h' for a command's usage.\n"+
		"Client commands find the name servers with -n ADDR;ADDR, or $NAMESRV_ADDR.\n")
}

func main() { os.Exit(run(os.Args[1:])) }

// run is main with its exit status.
func run(args []string) int {
	if len(args) == 0 {
		usage(os.Stderr)
		return 2
	}
	switch args[0] {
	case "-h", "-help", "--help":
		usage(os.Stdout)
		return 0
	case "help":
		if len(args) == 1 || args[1] == "help" {
			usage(os.Stdout)
			return 0
		}
		// samsa help topic create → samsa topic create -h
		args = append(append([]string{args[1]}, args[2:]...), "-h")
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(os.Stderr, "samsa: unknown command %q\n\n", args[0])
		usage(os.Stderr)
		return 2
	}
	cargs := args[1:]
	if len(cargs) > 0 && cargs[0] == "help" {
		// samsa dev help → samsa dev -h; samsa topic help create → samsa topic create -h
		cargs = append(cargs[1:len(cargs):len(cargs)], "-h")
	}
	if wantsHelp(cargs) {
		// Help goes to stdout, also from flag sets that print to their
		// default output (os.Stderr, read when they print).
		stderr := os.Stderr
		os.Stderr = os.Stdout
		defer func() { os.Stderr = stderr }()
	}
	err := c.run(cargs)
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	}
	var ue *usageError
	switch {
	case errors.Is(err, context.Canceled):
		// SIGINT or SIGTERM ended a one-shot command (consume and
		// produce stop cleanly instead, with status 0).
		fmt.Fprintf(os.Stderr, "samsa %s: interrupted\n", c.name)
		return 130
	case errors.As(err, &ue):
		fmt.Fprintf(os.Stderr, "samsa %s: %s\nRun 'samsa help %s' for usage.\n", ue.cmd, ue.err, ue.cmd)
		return 2
	case isUsageError(err):
		fmt.Fprintf(os.Stderr, "samsa %s: %s\nRun 'samsa help %s' for usage.\n", c.name, err, c.name)
		return 2
	}
	fmt.Fprintf(os.Stderr, "samsa %s: %s\n", c.name, strings.TrimSpace(err.Error()))
	return 1
}

// isUsageError reports whether err is the flag package's complaint about
// the command line.
func isUsageError(err error) bool {
	s := err.Error()
	for _, p := range []string{"flag provided but not defined", "invalid value ", "invalid boolean", "flag needs an argument", "bad flag syntax"} {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}
