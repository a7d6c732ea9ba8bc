// Command samsa is the one binary of Samsa: name server, broker, dev cluster,
// client tools, storage lab and load generator, as subcommands. This package
// is wiring only: flags → Options → a library call. Each subcommand lives in a
// file of its own (cmd_<name>.go) and registers itself in init.
package main

import (
	"fmt"
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

func usage() {
	fmt.Fprintf(os.Stderr, "usage: samsa <command> [flags]\n\ncommands:\n")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(os.Stderr, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprintf(os.Stderr, "\nRun 'samsa <command> -h' for a command's flags.\n")
}

func main() {
	if len(os.Args) < 2 || os.Args[1] == "-h" || os.Args[1] == "--help" || os.Args[1] == "help" {
		usage()
		if len(os.Args) < 2 {
			os.Exit(2)
		}
		return
	}
	c, ok := commands[os.Args[1]]
	if !ok {
		fmt.Fprintf(os.Stderr, "samsa: unknown command %q\n", os.Args[1])
		usage()
		os.Exit(2)
	}
	if err := c.run(os.Args[2:]); err != nil {
		fmt.Fprintf(os.Stderr, "samsa %s: %s\n", c.name, strings.TrimSpace(err.Error()))
		os.Exit(1)
	}
}
