package broker

import (
	"strings"
	"testing"
	"time"

	"github.com/samsamq/samsa/internal/netx/netxtest"
)

// TestConfigNetProperties: the connection keys parse, default and
// validate; a TLS mode without its files, a bad mode or policy and a
// missing certificate file are all reported, New refusing the last.
func TestConfigNetProperties(t *testing.T) {
	var c Config
	_, err := c.ParseProperties(strings.NewReader(`maxConnections=100
maxConnectionsPerAddress=10
serverChannelMaxIdleTimeSeconds=60
frameReadTimeoutMillis=5000
tlsMode=permissive
tlsCertFile=/x/server.pem
tlsKeyFile=/x/server-key.pem
tlsClientAuth=optional
tlsCAFile=/x/ca.pem
tlsEnable=true
tlsServerName=broker.example
`))
	if err != nil {
		t.Fatal(err)
	}
	c.StorePathRootDir = t.TempDir()
	c.EnsureDefaults()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.MaxConnections != 100 || c.MaxConnectionsPerAddress != 10 || c.ServerChannelMaxIdle != time.Minute ||
		c.FrameReadTimeout != 5*time.Second || c.TLSMode != "permissive" || !c.TLSEnable || c.TLSServerName != "broker.example" {
		t.Fatalf("parsed %+v", c.NetConfig)
	}
	if s := c.String(); !strings.Contains(s, "serverChannelMaxIdleTimeSeconds=60") || !strings.Contains(s, "tlsMode=permissive") {
		t.Fatalf("String: %s", s)
	}
	var d Config
	d.StorePathRootDir = t.TempDir()
	d.EnsureDefaults()
	if d.MaxConnections < 64 || d.MaxConnectionsPerAddress < 1 || d.ServerChannelMaxIdle != 120*time.Second ||
		d.FrameReadTimeout != 30*time.Second || d.TLSMode != "disabled" {
		t.Fatalf("defaults %+v", d.NetConfig)
	}
	bad := Config{StorePathRootDir: t.TempDir()}
	bad.NetConfig = NetConfig{TLSMode: "strict", TLSClientAuth: "sometimes"}
	bad.EnsureDefaults()
	msg := bad.Validate().Error()
	for _, want := range []string{"tlsMode \"strict\"", "tlsClientAuth \"sometimes\""} {
		if !strings.Contains(msg, want) {
			t.Errorf("Validate does not report %s: %s", want, msg)
		}
	}
	bad.TLSMode, bad.TLSClientAuth = "enforcing", "require"
	msg = bad.Validate().Error()
	for _, want := range []string{"needs tlsCertFile and tlsKeyFile", "needs tlsCAFile"} {
		if !strings.Contains(msg, want) {
			t.Errorf("Validate does not report %s: %s", want, msg)
		}
	}
	certs := netxtest.New(t)
	_, err = New(Config{StorePathRootDir: t.TempDir(), Logger: quietLogger(),
		NetConfig: NetConfig{TLSMode: "enforcing", TLSCertFile: certs.ServerCertFile + ".missing", TLSKeyFile: certs.ServerKey}})
	if err == nil || !strings.Contains(err.Error(), ".missing") {
		t.Fatalf("New with a missing certificate file: %v", err)
	}
}
