package acl

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"go.yaml.in/yaml/v3"
)

// RetryGroupPrefix makes a group's resource name, RocketMQ's retry topic of
// the group.
const RetryGroupPrefix = "%RETRY%"

// Account is one entry of the file's accounts list.
type Account struct {
	AccessKey          string
	SecretKey          string
	WhiteRemoteAddress string
	Admin              bool
	DefaultTopicPerm   Perm
	DefaultGroupPerm   Perm
	TopicPerms         map[string]Perm // by topic
	GroupPerms         map[string]Perm // by group (without the retry prefix)
	white              Matcher
}

// Config is one parsed accounts file. It is immutable.
type Config struct {
	GlobalWhite []Matcher
	Accounts    map[string]*Account // by access key
}

// fileAccount and file are plain_acl.yml as RocketMQ 4.x writes it.
type fileAccount struct {
	AccessKey          string   `yaml:"accessKey"`
	SecretKey          string   `yaml:"secretKey"`
	WhiteRemoteAddress string   `yaml:"whiteRemoteAddress"`
	Admin              bool     `yaml:"admin"`
	DefaultTopicPerm   string   `yaml:"defaultTopicPerm"`
	DefaultGroupPerm   string   `yaml:"defaultGroupPerm"`
	TopicPerms         []string `yaml:"topicPerms"`
	GroupPerms         []string `yaml:"groupPerms"`
}

type file struct {
	GlobalWhiteRemoteAddresses []string      `yaml:"globalWhiteRemoteAddresses"`
	Accounts                   []fileAccount `yaml:"accounts"`
	// DataVersion is written by RocketMQ's admin tools; read and ignored.
	DataVersion any `yaml:"dataVersion"`
}

// minKeyLen: RocketMQ refuses access and secret keys of 6 characters or
// fewer ("length should longer than 6").
const minKeyLen = 7

// Parse reads a plain_acl.yml. Every problem is reported (joined), so one
// pass over the file shows them all; unknown keys are errors too, as a
// misspelt key would otherwise silently grant or deny.
func Parse(data []byte) (*Config, error) {
	var f file
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil && !(errors.Is(err, io.EOF) && len(bytes.TrimSpace(data)) == 0) {
		return nil, fmt.Errorf("acl file: %w", err)
	}
	var errs []error
	c := &Config{Accounts: make(map[string]*Account, len(f.Accounts))}
	for _, s := range f.GlobalWhiteRemoteAddresses {
		m, err := ParseAddressPattern(s)
		if err != nil {
			errs = append(errs, fmt.Errorf("globalWhiteRemoteAddresses: %w", err))
			continue
		}
		c.GlobalWhite = append(c.GlobalWhite, m)
	}
	for i, fa := range f.Accounts {
		a, err := parseAccount(fa)
		if err != nil {
			errs = append(errs, fmt.Errorf("accounts[%d]: %w", i, err))
			continue
		}
		if _, dup := c.Accounts[a.AccessKey]; dup {
			errs = append(errs, fmt.Errorf("accounts[%d]: accessKey %q appears twice", i, a.AccessKey))
			continue
		}
		c.Accounts[a.AccessKey] = a
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("acl file: %w", err)
	}
	return c, nil
}

func parseAccount(fa fileAccount) (*Account, error) {
	var errs []error
	if len(fa.AccessKey) < minKeyLen || len(fa.SecretKey) < minKeyLen {
		errs = append(errs, fmt.Errorf("accessKey %q: accessKey and secretKey must be at least %d characters", fa.AccessKey, minKeyLen))
	}
	a := &Account{AccessKey: fa.AccessKey, SecretKey: fa.SecretKey, WhiteRemoteAddress: fa.WhiteRemoteAddress,
		Admin: fa.Admin, DefaultTopicPerm: Deny, DefaultGroupPerm: Deny,
		TopicPerms: map[string]Perm{}, GroupPerms: map[string]Perm{}}
	var err error
	if a.white, err = ParseAddressPattern(fa.WhiteRemoteAddress); err != nil {
		errs = append(errs, fmt.Errorf("whiteRemoteAddress: %w", err))
	}
	if fa.DefaultTopicPerm != "" {
		if a.DefaultTopicPerm, err = ParsePerm(fa.DefaultTopicPerm); err != nil {
			errs = append(errs, fmt.Errorf("defaultTopicPerm: %w", err))
		}
	}
	if fa.DefaultGroupPerm != "" {
		if a.DefaultGroupPerm, err = ParsePerm(fa.DefaultGroupPerm); err != nil {
			errs = append(errs, fmt.Errorf("defaultGroupPerm: %w", err))
		}
	}
	for _, kind := range []struct {
		name string
		in   []string
		out  map[string]Perm
	}{{"topicPerms", fa.TopicPerms, a.TopicPerms}, {"groupPerms", fa.GroupPerms, a.GroupPerms}} {
		for _, s := range kind.in {
			name, perm, ok := strings.Cut(s, "=")
			name = strings.TrimSpace(name)
			if !ok || name == "" || strings.Contains(perm, "=") {
				errs = append(errs, fmt.Errorf("%s: %q: want NAME=PERM", kind.name, s))
				continue
			}
			p, err := ParsePerm(perm)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %q: %w", kind.name, s, err))
				continue
			}
			kind.out[name] = p
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return a, nil
}
