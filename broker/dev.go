package broker

import (
	"errors"
	"log/slog"
	"os"

	"github.com/samsamq/samsa/namesrv"
)

// DevOptions configure StartDev's embedded cluster.
type DevOptions struct {
	// Dir is the broker's storePathRootDir. Default: a new temporary
	// directory, removed by Dev.Close unless Keep.
	Dir string
	// Keep leaves a temporary Dir in place on Close.
	Keep bool
	// NamesrvListen is the name server's address. Default "127.0.0.1:0".
	NamesrvListen string
	// Broker is the broker's configuration template; StartDev sets
	// StorePathRootDir and NamesrvAddrs, and, unless set, a free port
	// (listenPort 0). Zero fields get the usual defaults.
	Broker Config
	// Logger for both servers. Default slog.Default().
	Logger *slog.Logger
}

// Dev is a running name server and broker in this process: what `samsa
// dev`, tests, the lab and loadgen use as an embedded cluster.
type Dev struct {
	Namesrv *namesrv.Server
	Broker  *Broker
	Dir     string
	tempDir bool
	keep    bool
}

// NamesrvAddr is the name server's address.
func (d *Dev) NamesrvAddr() string { return d.Namesrv.Addr() }

// BrokerAddr is the broker's remoting address.
func (d *Dev) BrokerAddr() string { return d.Broker.Addr() }

// StartDev starts a name server and a broker registered with it, both on
// loopback.
func StartDev(opts DevOptions) (*Dev, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	d := &Dev{Dir: opts.Dir, keep: opts.Keep}
	if d.Dir == "" {
		dir, err := os.MkdirTemp("", "samsa-dev-")
		if err != nil {
			return nil, err
		}
		d.Dir, d.tempDir = dir, true
	}
	listen := opts.NamesrvListen
	if listen == "" {
		listen = "127.0.0.1:0"
	}
	ns, err := namesrv.New(namesrv.Options{Listen: listen, Logger: opts.Logger})
	if err == nil {
		err = ns.Start()
	}
	if err != nil {
		d.removeDir()
		return nil, err
	}
	d.Namesrv = ns
	cfg := opts.Broker.clone()
	cfg.StorePathRootDir = d.Dir
	cfg.NamesrvAddrs = []string{ns.Addr()}
	if cfg.ListenPort == 0 {
		_ = cfg.Set("listenPort", "0")
	}
	if cfg.Logger == nil {
		cfg.Logger = opts.Logger
	}
	b, err := New(cfg)
	if err == nil {
		if err = b.Start(); err != nil {
			b.Close()
		}
	}
	if err != nil {
		ns.Close()
		d.removeDir()
		return nil, err
	}
	d.Broker = b
	return d, nil
}

func (d *Dev) removeDir() {
	if d.tempDir && !d.keep {
		os.RemoveAll(d.Dir)
	}
}

// Close stops the broker (cleanly), then the name server, and removes a
// temporary directory.
func (d *Dev) Close() error {
	err := d.Broker.Close()
	err = errors.Join(err, d.Namesrv.Close())
	d.removeDir()
	return err
}
