package broker

import (
	"strings"
	"testing"
	"time"
)

func TestConfigHAParse(t *testing.T) {
	conf := `brokerName=broker-a
brokerId=2
brokerRole=SLAVE
storePathRootDir=/tmp/s
listenPort=20911
haMasterAddress=10.0.0.1:10912
haSendHeartbeatInterval=2000
haHousekeepingInterval=30s
haTransferBatchSize=65536
haMaxGapNotInSync=1048576
haSlaveAckFlushed=true
haFullCopy=false
inSyncReplicas=3
minInSyncReplicas=2
totalReplicas=4
slaveReadEnable=true
accessMessageInMemoryMaxRatio=0
totalPhysicalMemorySize=1000
slaveSyncInterval=500
autoCreateSubscriptionGroup=false
`
	var c Config
	unknown, err := c.ParseProperties(strings.NewReader(conf))
	if err != nil || len(unknown) != 0 {
		t.Fatalf("unknown %v, err %v", unknown, err)
	}
	c.EnsureDefaults()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.BrokerRole != Slave || c.BrokerID != 2 || c.HAListenPort != 20912 || c.HAMasterAddress != "10.0.0.1:10912" ||
		c.HASendHeartbeatInterval != 2*time.Second || c.HAHousekeepingInterval != 30*time.Second ||
		c.HATransferBatchSize != 64<<10 || c.HAMaxGapNotInSync != 1<<20 || !c.HASlaveAckFlushed || c.HAFullCopy ||
		c.InSyncReplicas != 3 || c.MinInSyncReplicas != 2 || c.TotalReplicas != 4 || !c.SlaveReadEnable ||
		c.AccessMessageInMemoryMaxRatio != 0 || c.TotalPhysicalMemorySize != 1000 ||
		c.SlaveSyncInterval != 500*time.Millisecond || c.AutoCreateSubscriptionGroup {
		t.Fatalf("parsed %s", c.String())
	}
	if c.HASlaveAckTimeout != c.SyncFlushTimeout {
		t.Fatalf("haSlaveAckTimeout %v, want syncFlushTimeout %v", c.HASlaveAckTimeout, c.SyncFlushTimeout)
	}
	if n := c.SlaveAcksNeeded(); n != 2 {
		t.Fatalf("SlaveAcksNeeded = %d with inSyncReplicas 3", n)
	}
	for _, want := range []string{"brokerRole=SLAVE", "haListenPort=20912", "inSyncReplicas=3", "slaveReadEnable=true"} {
		if !strings.Contains(c.String(), want) {
			t.Errorf("String lacks %s: %s", want, c.String())
		}
	}
}

func TestConfigHADefaults(t *testing.T) {
	c := Config{StorePathRootDir: "/x"}
	c.EnsureDefaults()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.HAListenPort != DefaultListenPort+1 || c.HASendHeartbeatInterval != 5*time.Second ||
		c.HAHousekeepingInterval != 20*time.Second || c.HATransferBatchSize != 32<<10 || c.HAMaxGapNotInSync != 256<<20 ||
		c.HASlaveAckTimeout != 5*time.Second || c.HASlaveAckFlushed || !c.HAFullCopy || c.InSyncReplicas != 1 ||
		c.MinInSyncReplicas != 1 || c.TotalReplicas != 1 || c.SlaveReadEnable || c.AccessMessageInMemoryMaxRatio != 40 ||
		c.TotalPhysicalMemorySize <= 0 || c.SlaveSyncInterval != 10*time.Second || !c.AutoCreateSubscriptionGroup {
		t.Fatalf("defaults %s", c.String())
	}
	if c.SlaveAcksNeeded() != 1 {
		t.Fatalf("a SYNC_MASTER waits for one slave at least, got %d", c.SlaveAcksNeeded())
	}

	// listenPort 0 (a free port): the HA port is free too.
	var z Config
	z.StorePathRootDir = "/x"
	if err := z.Set("listenPort", "0"); err != nil {
		t.Fatal(err)
	}
	z.EnsureDefaults()
	if z.HAListenPort != 0 {
		t.Fatalf("haListenPort %d with listenPort 0", z.HAListenPort)
	}
	// An explicit inSyncReplicas makes the default totalReplicas follow.
	i := Config{StorePathRootDir: "/x", InSyncReplicas: 2}
	i.EnsureDefaults()
	if i.TotalReplicas != 2 || i.Validate() != nil {
		t.Fatalf("totalReplicas %d: %v", i.TotalReplicas, i.Validate())
	}
	// EnsureDefaults twice changes nothing.
	again := c
	again.EnsureDefaults()
	if again.String() != c.String() {
		t.Fatalf("EnsureDefaults is not idempotent:\n%s\n%s", c.String(), again.String())
	}
}

func TestConfigHAValidate(t *testing.T) {
	for _, tc := range []struct {
		conf, want string
	}{
		{"brokerRole=SLAVE\nbrokerId=0", "brokerRole SLAVE needs brokerId 1"},
		{"brokerRole=ASYNC_MASTER\nbrokerId=1", "needs brokerId 0"},
		{"brokerRole=SYNC_MASTER\nbrokerId=3", "needs brokerId 0"},
		{"brokerRole=REPLICA", "is not ASYNC_MASTER"},
		{"listenPort=10911\nhaListenPort=10911", "haListenPort 10911 is listenPort"},
		{"haListenPort=70000", "haListenPort 70000"},
		{"haMasterAddress=nowhere", "haMasterAddress"},
		{"inSyncReplicas=2\nminInSyncReplicas=3\ntotalReplicas=3", "minInSyncReplicas"},
		{"inSyncReplicas=3\ntotalReplicas=2", "totalReplicas"},
		{"accessMessageInMemoryMaxRatio=101", "accessMessageInMemoryMaxRatio"},
		{"haTransferBatchSize=-1", "haTransferBatchSize"},
		{"slaveSyncInterval=-5", "slaveSyncInterval"},
		{"totalPhysicalMemorySize=-1", "totalPhysicalMemorySize"},
	} {
		var c Config
		if _, err := c.ParseProperties(strings.NewReader("storePathRootDir=/x\n" + tc.conf)); err != nil {
			t.Fatal(err)
		}
		c.EnsureDefaults()
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err %v, want %q", tc.conf, err, tc.want)
		}
	}
	// A slave with its id is fine.
	var c Config
	if _, err := c.ParseProperties(strings.NewReader("storePathRootDir=/x\nbrokerRole=slave\nbrokerId=1\n")); err != nil {
		t.Fatal(err)
	}
	c.EnsureDefaults()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
}
