package rabbitdriver

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/samsamq/samsa/internal/freeport"
	"github.com/samsamq/samsa/loadgen/peerproc"
)

// server is a rabbitmq-server this driver started, with the epmd (Erlang's
// port mapper) it registers with: both children of this process, on
// ports of their own on 127.0.0.1, so neither the system's epmd nor its
// RabbitMQ node is touched.
type server struct {
	epmd, rabbit *peerproc.Proc
	amqpPort     int
	streamPort   int
}

// rabbitBinary prefers the release's own start script: Debian's
// /usr/sbin/rabbitmq-server wrapper changes user and directory.
func rabbitBinary() (string, error) {
	bin, err := peerproc.Find("rabbitmq-server", "rabbitmq-server")
	if err != nil {
		return "", err
	}
	if p := "/usr/lib/rabbitmq/bin/rabbitmq-server"; fileExists(p) {
		return p, nil
	}
	return bin, nil
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// startServer runs epmd and rabbitmq-server with their files under dir,
// on fresh ports again (up to three tries) when one was taken meanwhile.
// dir is made absolute first: RabbitMQ's start scripts change directory,
// so a relative one (loadgen --dir .benchdata/e2e) named nothing there.
func startServer(dir string) (*server, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	for try := 1; ; try++ {
		s, err := startServerOnce(dir)
		if err == nil || !peerproc.AddrInUse(err) || try == 3 {
			return s, err
		}
		_ = os.RemoveAll(filepath.Join(dir, "mnesia"))
	}
}

func startServerOnce(dir string) (*server, error) {
	bin, err := rabbitBinary()
	if err != nil {
		return nil, err
	}
	epmdBin, err := peerproc.Find("epmd", "erlang-base")
	if err != nil {
		return nil, err
	}
	ports, err := freeport.Get(4) // distinct
	if err != nil {
		return nil, err
	}
	epmdPort, amqpPort, distPort, streamPort := ports[0], ports[1], ports[2], ports[3]
	s := &server{amqpPort: amqpPort, streamPort: streamPort}
	conf := fmt.Sprintf("loopback_users = none\nlisteners.tcp.default = 127.0.0.1:%d\n"+
		"stream.listeners.tcp.1 = 127.0.0.1:%d\nstream.advertised_host = 127.0.0.1\nstream.advertised_port = %d\n"+
		"log.console = true\nlog.console.level = warning\nlog.file = false\n", amqpPort, streamPort, streamPort)
	files := map[string]string{
		"rabbitmq.conf":   conf,
		"enabled_plugins": "[rabbitmq_stream].\n", // the stream protocol, in this node's own plugins file
		"advanced.config": "[].\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			return nil, err
		}
	}
	if s.epmd, err = peerproc.Start(epmdBin, []string{"-port", strconv.Itoa(epmdPort), "-address", "127.0.0.1"},
		nil, dir, filepath.Join(dir, "epmd.log")); err != nil {
		return nil, err
	}
	if err := s.epmd.WaitReady(10*time.Second, func() error { return dial(epmdPort) }); err != nil {
		return nil, errors.Join(err, s.stop())
	}
	env := []string{
		"HOME=" + dir, // its Erlang cookie
		"ERL_EPMD_PORT=" + strconv.Itoa(epmdPort),
		"RABBITMQ_NODENAME=samsalab" + strconv.Itoa(amqpPort) + "@localhost",
		"RABBITMQ_NODE_IP_ADDRESS=127.0.0.1",
		"RABBITMQ_NODE_PORT=" + strconv.Itoa(amqpPort),
		"RABBITMQ_DIST_PORT=" + strconv.Itoa(distPort),
		"RABBITMQ_MNESIA_BASE=" + filepath.Join(dir, "mnesia"),
		"RABBITMQ_LOG_BASE=" + filepath.Join(dir, "log"),
		"RABBITMQ_ENABLED_PLUGINS_FILE=" + filepath.Join(dir, "enabled_plugins"),
		"RABBITMQ_CONFIG_FILE=" + filepath.Join(dir, "rabbitmq"),
		"RABBITMQ_ADVANCED_CONFIG_FILE=" + filepath.Join(dir, "advanced.config"),
		"RABBITMQ_PID_FILE=" + filepath.Join(dir, "rabbitmq.pid"),
	}
	if s.rabbit, err = peerproc.Start(bin, nil, env, dir, filepath.Join(dir, "rabbitmq.log")); err != nil {
		return nil, errors.Join(err, s.stop())
	}
	ready := func() error {
		if err := dial(amqpPort); err != nil {
			return err
		}
		return dial(streamPort)
	}
	if err := s.rabbit.WaitReady(90*time.Second, ready); err != nil {
		return nil, errors.Join(err, s.stop())
	}
	return s, nil
}

func dial(port int) error {
	c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), time.Second)
	if err == nil {
		_ = c.Close() // a probe: nothing sent on it
	}
	return err
}

// stop ends RabbitMQ (SIGTERM: it shuts down cleanly in a few seconds),
// then its epmd.
func (s *server) stop() error {
	var err error
	if s.rabbit != nil {
		err = s.rabbit.Stop(30 * time.Second)
	}
	if s.epmd != nil {
		err = errors.Join(err, s.epmd.Stop(5*time.Second))
	}
	return err
}
