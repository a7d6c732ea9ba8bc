package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/samsamq/samsa/client"
	"github.com/samsamq/samsa/internal/netx"
)

// clientFlags are the flags every client command shares.
type clientFlags struct {
	namesrv string
	json    bool
	timeout time.Duration
	secure  *secureFlags
}

func addClientFlags(fs *flag.FlagSet) *clientFlags {
	f := &clientFlags{}
	def := client.DefaultNameServer
	if env := strings.TrimSpace(os.Getenv("NAMESRV_ADDR")); env != "" {
		def = env
	}
	const help = "name server address(es), ';'-separated (default from $NAMESRV_ADDR when set)"
	fs.StringVar(&f.namesrv, "namesrv", def, help)
	fs.StringVar(&f.namesrv, "n", def, "short for --namesrv, as in RocketMQ's tools")
	fs.BoolVar(&f.json, "json", false, "print JSON (for scripts) instead of text")
	fs.DurationVar(&f.timeout, "timeout", 10*time.Second, "how long to wait for the cluster's answers")
	f.secure = addSecureFlags(fs)
	return f
}

// options are the client settings the flags give; an unreadable TLS file
// is an error.
func (f *clientFlags) options() (client.ClientOptions, error) {
	o := client.ClientOptions{NameServers: client.ParseNameServers(f.namesrv), RequestTimeout: f.timeout}
	return o, f.secure.apply(&o)
}

// secureFlags are the TLS and ACL flags of every command that is a client
// of a cluster (the client commands and loadgen).
type secureFlags struct {
	tls       netx.TLSClientOptions
	accessKey string
	secretKey string
}

func addSecureFlags(fs *flag.FlagSet) *secureFlags {
	f := &secureFlags{}
	fs.BoolVar(&f.tls.Enable, "tls", false, "connect to name servers and brokers with TLS")
	fs.StringVar(&f.tls.CAFile, "tls-ca", "", "PEM CAs that sign the servers' certificates (default: the system's); implies --tls")
	fs.StringVar(&f.tls.CertFile, "tls-cert", "", "PEM client certificate, for servers that require one; implies --tls")
	fs.StringVar(&f.tls.KeyFile, "tls-key", "", "PEM key of --tls-cert")
	fs.StringVar(&f.tls.ServerName, "tls-server-name", "", "name to check in the servers' certificates (default: the host dialed)")
	fs.BoolVar(&f.tls.InsecureSkipVerify, "tls-insecure", false, "accept any server certificate (tests only); implies --tls")
	fs.StringVar(&f.accessKey, "access-key", os.Getenv("SAMSA_ACCESS_KEY"), "ACL account to sign requests with (default $SAMSA_ACCESS_KEY)")
	fs.StringVar(&f.secretKey, "secret-key", "", "the account's secret key (default $SAMSA_SECRET_KEY; prefer the variable: a flag shows in ps)")
	return f
}

// apply sets o's credentials and TLS from the flags.
func (f *secureFlags) apply(o *client.ClientOptions) error {
	sk := f.secretKey
	if sk == "" {
		sk = os.Getenv("SAMSA_SECRET_KEY")
	}
	o.Credentials = client.Credentials{AccessKey: f.accessKey, SecretKey: sk}
	t := f.tls
	t.Enable = t.Enable || t.CAFile != "" || t.CertFile != "" || t.InsecureSkipVerify
	cfg, err := t.Config()
	if err != nil {
		return fmt.Errorf("--tls: %w", err)
	}
	o.TLS = cfg
	return nil
}

func (f *clientFlags) admin() (*client.Admin, error) {
	o, err := f.options()
	if err != nil {
		return nil, err
	}
	return client.NewAdmin(o)
}

// connect is a one-shot admin command's prologue: an Admin, a context
// bounded by --timeout, and done to release both.
func (f *clientFlags) connect() (*client.Admin, context.Context, func(), error) {
	a, err := f.admin()
	if err != nil {
		return nil, nil, nil, err
	}
	ctx, cancel := f.context()
	return a, ctx, func() { cancel(); _ = a.Close() }, nil // Admin.Close reports nothing
}

// context bounds a one-shot command by --timeout; SIGINT or SIGTERM ends
// it sooner.
func (f *clientFlags) context() (context.Context, context.CancelFunc) {
	ictx, stop := interruptContext()
	ctx, cancel := context.WithTimeout(ictx, f.timeout)
	return ctx, func() { cancel(); stop() }
}

// interruptContext ends on SIGINT or SIGTERM (long-running commands).
func interruptContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

func printJSON(v any) error {
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// table writes aligned columns to stdout. With two or more columns the
// tabwriter holds every line until Flush: a write error comes from Flush,
// which the caller returns (so table and row drop the writes' errors).
func table(header ...string) *tabwriter.Writer {
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	_, _ = fmt.Fprintln(tw, strings.Join(header, "\t"))
	return tw
}

func row(w io.Writer, cols ...any) {
	s := make([]string, len(cols))
	for i, c := range cols {
		s[i] = fmt.Sprint(c)
	}
	_, _ = fmt.Fprintln(w, strings.Join(s, "\t")) // w is a table's tabwriter: its Flush reports
}

// parseFlags parses args allowing flags after positional arguments
// ("topic create T --queues 4"); it returns the positional ones.
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := parseArgs(fs, args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// parseTopic parses a per-topic command's flags and returns its topic.
// topic is the --topic flag's variable, read after parsing.
func parseTopic(fs *flag.FlagSet, topic *string, args []string) (string, error) {
	rest, err := parseFlags(fs, args)
	if err != nil {
		return "", err
	}
	return topicArg(*topic, rest)
}

// topicArg takes the topic from --topic or the first argument.
func topicArg(flagTopic string, rest []string) (string, error) {
	if flagTopic != "" {
		return flagTopic, nil
	}
	if len(rest) > 0 {
		return rest[0], nil
	}
	return "", fmt.Errorf("a topic is required (--topic T)")
}

// parseTime reads --from TIME: RFC 3339, "2006-01-02 15:04:05",
// "2006-01-02", Unix milliseconds, or a negative duration from now ("-10m").
func parseTime(s string) (time.Time, error) {
	if strings.HasPrefix(s, "-") {
		d, err := time.ParseDuration(s[1:])
		if err == nil {
			return time.Now().Add(-d), nil
		}
	}
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		return time.UnixMilli(ms), nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02 15:04:05", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("cannot read %q as a time (RFC 3339, 2006-01-02 15:04:05, Unix ms, or -10m)", s)
}

// balancer names the producer balancers for --balancer.
func balancer(name string) (client.Balancer, error) {
	switch name {
	case "", "rr", "roundrobin", "round-robin":
		return &client.RoundRobin{}, nil
	case "random":
		return client.Random{}, nil
	case "hash", "modulo":
		return &client.HashModulo{}, nil
	case "consistent", "consistent-hash":
		return &client.ConsistentHash{}, nil
	case "slots", "hash-slots":
		return &client.HashSlots{}, nil
	}
	return nil, fmt.Errorf("unknown balancer %q (rr, random, hash, consistent, slots)", name)
}
