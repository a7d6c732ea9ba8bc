package main

import (
	"github.com/samsamq/samsa/broker/dashboard"
	"github.com/samsamq/samsa/client"
)

// dashboardAdmin gives a broker's dashboard the Go client's admin API
// for its cluster view, as `samsa cluster` uses it. The broker cannot
// build one itself: package client's tests start brokers, so package
// broker may not import it.
func dashboardAdmin(o dashboard.AdminOptions) (dashboard.Admin, error) {
	a, err := client.NewAdmin(client.ClientOptions{NameServers: o.NameServers, TLS: o.TLS,
		Credentials:    client.Credentials{AccessKey: o.AccessKey, SecretKey: o.SecretKey},
		RequestTimeout: o.Timeout, DialTimeout: o.Timeout, Logger: o.Logger})
	if err != nil {
		return nil, err // not a typed nil in the interface
	}
	return a, nil
}
