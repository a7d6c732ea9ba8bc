package broker

import (
	"path/filepath"
	"time"
)

// ACLConfig holds the access-control settings (acl.go). It is embedded in
// Config, so its fields read as Config's.
type ACLConfig struct {
	// ACLEnable (aclEnable): check every remoting request against the
	// accounts file (RocketMQ 4.x plain ACL), the admin HTTP listener asks
	// for an admin account (HTTP basic auth) and the HA listener for an
	// admin account's handshake. Default false: every request is served.
	ACLEnable bool
	// ACLFile (aclFile): the accounts file, RocketMQ's plain_acl.yml
	// format. Default <storePathRootDir>/config/plain_acl.yml. It must exist
	// and parse when aclEnable is true; it is reloaded when it changes, and
	// a change that does not parse keeps the previous accounts (logged).
	ACLFile string
	// ACLReloadInterval (aclReloadIntervalMs, ours, ms): how often the
	// accounts file is looked at. Default 1 s.
	ACLReloadInterval time.Duration
	// AccessKey and SecretKey (accessKey, secretKey): the broker's own
	// account, used to sign what it sends: registrations to name servers, a
	// slave's calls to its master and its HA handshake. Empty: unsigned.
	// With ACL on they should name an admin account.
	AccessKey string
	SecretKey string
}

var aclProps = []property{
	boolProp("aclEnable", func(c *Config) *bool { return &c.ACLEnable }),
	strProp("aclFile", func(c *Config) *string { return &c.ACLFile }),
	msProp("aclReloadIntervalMs", func(c *Config) *time.Duration { return &c.ACLReloadInterval }),
	strProp("accessKey", func(c *Config) *string { return &c.AccessKey }),
	{name: "secretKey",
		set: func(c *Config, v string) error { c.SecretKey = v; return nil },
		// Never printed: Config.String goes to logs and result files.
		get: func(c *Config) string {
			if c.SecretKey == "" {
				return ""
			}
			return "(set)"
		}},
}

func (c *Config) ensureACLDefaults() {
	if c.ACLFile == "" && c.StorePathRootDir != "" {
		c.ACLFile = filepath.Join(c.ConfigDir(), "plain_acl.yml")
	}
	setDur(&c.ACLReloadInterval, time.Second)
}

func (c *Config) validateACL(bad func(format string, a ...any)) {
	if c.ACLReloadInterval <= 0 {
		bad("aclReloadIntervalMs %v must be positive", c.ACLReloadInterval)
	}
	if (c.AccessKey == "") != (c.SecretKey == "") {
		bad("accessKey and secretKey go together: give both or neither")
	}
	if c.ACLEnable && c.ACLFile == "" {
		bad("aclEnable=true needs aclFile")
	}
}
