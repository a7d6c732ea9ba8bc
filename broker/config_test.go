package broker

import (
	"strings"
	"testing"
	"time"
)

func TestConfigParseProperties(t *testing.T) {
	conf := `# RocketMQ style
brokerClusterName = DefaultCluster
brokerName=broker-b
brokerId:0
namesrvAddr = 127.0.0.1:9876;127.0.0.1:9877
deleteWhen = 04
fileReservedTime = 48
brokerRole = ASYNC_MASTER
flushDiskType = SYNC_FLUSH
mapedFileSizeCommitLog = 1048576
autoCreateTopicEnable=false
storePathRootDir=/tmp/with\
  continued
groupCommitMinInterval = 2ms
groupCommitMaxGather = 150us
flushIntervalCommitLog 250
`
	var c Config
	unknown, err := c.ParseProperties(strings.NewReader(conf))
	if err != nil {
		t.Fatal(err)
	}
	if len(unknown) != 1 || unknown[0] != "deleteWhen" {
		t.Fatalf("unknown = %v", unknown)
	}
	c.EnsureDefaults()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.BrokerName != "broker-b" || len(c.NamesrvAddrs) != 2 || c.FileReservedTime != 48 ||
		c.FlushDiskType != SyncFlush || c.MappedFileSizeCommitLog != 1<<20 || c.AutoCreateTopicEnable ||
		c.StorePathRootDir != "/tmp/withcontinued" || c.GroupCommitMinInterval != 2*time.Millisecond || c.GroupCommitMaxGather != 150*time.Microsecond ||
		c.FlushIntervalCommitLog != 250*time.Millisecond {
		t.Fatalf("parsed %s", c.String())
	}
	if !c.LongPollingEnable || c.ListenAddr != "127.0.0.1" || c.ListenPort != 10911 || c.BrokerIP1 != "127.0.0.1" {
		t.Fatalf("defaults %s", c.String())
	}
	if !strings.Contains(c.String(), "brokerName=broker-b") || !strings.Contains(c.String(), "groupCommitMaxGather=150µs") {
		t.Fatal(c.String())
	}
}

func TestConfigValidateReportsAll(t *testing.T) {
	c := Config{FlushDiskType: "SOMETIMES", ListenPort: 70000, StoreBackend: "tape"}
	c.EnsureDefaults()
	err := c.Validate()
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"storePathRootDir", "flushDiskType", "listenPort", "storeBackend"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %s: %v", want, err)
		}
	}
}

func TestConfigBadValues(t *testing.T) {
	var c Config
	_, err := c.ParseProperties(strings.NewReader("listenPort=abc\nautoCreateTopicEnable=maybe\n"))
	if err == nil || !strings.Contains(err.Error(), "listenPort") || !strings.Contains(err.Error(), "autoCreateTopicEnable") {
		t.Fatalf("err = %v", err)
	}
	if err := c.Set("listenPort", "0"); err != nil {
		t.Fatal(err)
	}
	c.StorePathRootDir = "/x"
	c.EnsureDefaults()
	if c.ListenPort != 0 {
		t.Fatalf("explicit 0 port overwritten: %d", c.ListenPort)
	}
}
