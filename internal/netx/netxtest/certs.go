// Package netxtest makes throwaway TLS material for tests: a CA, a server
// certificate for 127.0.0.1 and localhost, and a client certificate, all
// generated in memory and written as PEM files to a test's directory.
package netxtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// Certs are the PEM files of one throwaway CA and the certificates it
// signed.
type Certs struct {
	CAFile                    string
	ServerCertFile, ServerKey string
	ClientCertFile, ClientKey string
	// OtherCAFile is a second CA that signed nothing here (a client
	// trusting only it rejects the server).
	OtherCAFile string
}

// New writes a fresh CA, server and client certificate under t.TempDir().
func New(t testing.TB) *Certs {
	t.Helper()
	dir := t.TempDir()
	caKey, caCert, caDER := newCA(t, "samsa test CA")
	_, _, otherDER := newCA(t, "other CA")
	c := &Certs{
		CAFile:         writePEM(t, dir, "ca.pem", "CERTIFICATE", caDER),
		OtherCAFile:    writePEM(t, dir, "other-ca.pem", "CERTIFICATE", otherDER),
		ServerCertFile: filepath.Join(dir, "server.pem"), ServerKey: filepath.Join(dir, "server-key.pem"),
		ClientCertFile: filepath.Join(dir, "client.pem"), ClientKey: filepath.Join(dir, "client-key.pem"),
	}
	leaf(t, caKey, caCert, "samsa server", true, c.ServerCertFile, c.ServerKey)
	leaf(t, caKey, caCert, "samsa client", false, c.ClientCertFile, c.ClientKey)
	return c
}

// ClientConfig trusts the CA, optionally presenting the client
// certificate.
func (c *Certs) ClientConfig(t testing.TB, withCert bool) *tls.Config {
	t.Helper()
	pem, err := os.ReadFile(c.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	cfg := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if withCert {
		cert, err := tls.LoadX509KeyPair(c.ClientCertFile, c.ClientKey)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg
}

var serial atomic.Int64

func nextSerial() *big.Int { return big.NewInt(time.Now().UnixNano() + serial.Add(1)) }

func newCA(t testing.TB, name string) (*ecdsa.PrivateKey, *x509.Certificate, []byte) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: nextSerial(), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return key, cert, der
}

func leaf(t testing.TB, caKey *ecdsa.PrivateKey, ca *x509.Certificate, name string, server bool, certFile, keyFile string) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: nextSerial(), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
		tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)}
		tmpl.DNSNames = []string{"localhost"}
	} else {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	writePEM(t, filepath.Dir(certFile), filepath.Base(certFile), "CERTIFICATE", der)
	writePEM(t, filepath.Dir(keyFile), filepath.Base(keyFile), "EC PRIVATE KEY", kder)
}

func writePEM(t testing.TB, dir, name, typ string, der []byte) string {
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
