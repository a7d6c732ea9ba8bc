package broker

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestConfigACL(t *testing.T) {
	var c Config
	for k, v := range map[string]string{"aclEnable": "true", "accessKey": "adminKey1", "secretKey": "adminSecret1",
		"aclReloadIntervalMs": "250", "storePathRootDir": "/x"} {
		if err := c.Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
	c.EnsureDefaults()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if !c.ACLEnable || c.ACLFile != filepath.Join("/x", "config", "plain_acl.yml") || c.ACLReloadInterval != 250*time.Millisecond {
		t.Fatalf("acl config: %+v", c.ACLConfig)
	}
	if s := c.String(); strings.Contains(s, "adminSecret1") || !strings.Contains(s, "secretKey=(set)") || !strings.Contains(s, "accessKey=adminKey1") {
		t.Fatalf("String shows the secret or not the settings: %s", s)
	}
	c.SecretKey = ""
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "accessKey and secretKey go together") {
		t.Fatalf("accessKey without secretKey: %v", err)
	}
}
