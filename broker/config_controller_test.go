package broker

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestControllerConfig(t *testing.T) {
	parse := func(text string) (Config, error) {
		var c Config
		if _, err := c.ParseProperties(strings.NewReader(text)); err != nil {
			t.Fatal(err)
		}
		c.StorePathRootDir = t.TempDir()
		c.EnsureDefaults()
		return c, c.Validate()
	}
	c, err := parse("brokerName=b\nbrokerId=2\nbrokerRole=SYNC_MASTER\nenableControllerMode=true\n" +
		"controllerAddr=127.0.0.1:9878; 127.0.0.1:9868\nbrokerHeartbeatInterval=200\ncontrollerHeartBeatTimeoutMills=2000\n" +
		"haMaxTimeSlaveNotCatchup=7000\n")
	if err != nil {
		t.Fatal(err)
	}
	if !c.EnableControllerMode || len(c.ControllerAddrs) != 2 || c.ControllerAddrs[1] != "127.0.0.1:9868" ||
		c.BrokerHeartbeatInterval != 200*time.Millisecond || c.ControllerHeartBeatTimeout != 2*time.Second ||
		c.HAMaxTimeSlaveNotCatchup != 7*time.Second {
		t.Fatalf("parsed %+v", c)
	}
	if s := c.String(); !strings.Contains(s, "controllerAddr=127.0.0.1:9878;127.0.0.1:9868") || !strings.Contains(s, "enableControllerMode=true") {
		t.Fatalf("String: %s", s)
	}
	d, err := parse("brokerName=b\n")
	if err != nil || d.BrokerHeartbeatInterval != DefaultBrokerHeartbeatInterval ||
		d.ControllerHeartBeatTimeout != DefaultControllerHeartBeatTimeout || d.HAMaxTimeSlaveNotCatchup != DefaultHAMaxTimeSlaveNotCatchup {
		t.Fatalf("defaults: %v %+v", err, d)
	}
	// Every bad setting is reported, all at once.
	_, err = parse("brokerName=b\nbrokerId=0\nbrokerRole=SLAVE\nenableControllerMode=true\nhaMasterAddress=127.0.0.1:1\n" +
		"controllerAddr=nohost\nbrokerHeartbeatInterval=5000\ncontrollerHeartBeatTimeoutMills=3000\n")
	for _, want := range []string{"brokerRole \"SLAVE\" must be ASYNC_MASTER or SYNC_MASTER", "brokerId 0 must be 1 or more",
		"haMasterAddress", "controllerAddr \"nohost\"", "brokerHeartbeatInterval 5s must be below"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("bad config: %v, want it to say %q", err, want)
		}
	}
	if _, err := parse("brokerName=b\nbrokerId=1\nenableControllerMode=true\n"); err == nil || !strings.Contains(err.Error(), "controllerAddr is empty") {
		t.Errorf("no controllerAddr: %v", err)
	}
}

// conf/broker-a-controller.conf parses with no unknown key and validates.
func TestExampleControllerConf(t *testing.T) {
	f, err := os.Open(filepath.Join("..", "conf", "broker-a-controller.conf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var c Config
	unknown, err := c.ParseProperties(f)
	if err != nil || len(unknown) > 0 {
		t.Fatalf("%v, unknown keys %v", err, unknown)
	}
	c.EnsureDefaults()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if !c.EnableControllerMode || c.BrokerID < 1 {
		t.Fatalf("role %s id %d controller %v", c.BrokerRole, c.BrokerID, c.EnableControllerMode)
	}
}
