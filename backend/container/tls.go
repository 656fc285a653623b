package container

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"os"

	"github.com/primerhq/primer/errs"
)

// tlsConfig builds the client TLS config of a TLS engine from t: each of
// the CA, the certificate and the key from its PEM value (a member's
// inline secret) or from its file on the platform's host (an admin's).
// Errors name the field and never quote the PEM.
func tlsConfig(t *TLSConfig) (*tls.Config, error) {
	pem := func(name, file, value string) ([]byte, error) {
		if value != "" {
			return []byte(value), nil
		}
		b, err := os.ReadFile(file)
		if err != nil {
			f := "spec.config.connection.tls." + name + "_file"
			return nil, errs.Field(f, "%s: cannot read %s: %v", f, file, err)
		}
		return b, nil
	}
	ca, err := pem("ca", t.CAFile, t.CA)
	if err != nil {
		return nil, err
	}
	cert, err := pem("cert", t.CertFile, t.Cert)
	if err != nil {
		return nil, err
	}
	key, err := pem("key", t.KeyFile, t.Key)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, errs.Field("spec.config.connection.tls.ca", "spec.config.connection.tls.ca: holds no PEM certificate")
	}
	pair, err := tls.X509KeyPair(cert, key)
	if err != nil {
		// X509KeyPair's messages describe, never quote, the material.
		return nil, errs.Field("spec.config.connection.tls.cert", "spec.config.connection.tls.cert: with tls.key, not a certificate and key pair: %v", err)
	}
	return &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}, nil
}

// tlsClient is an HTTP client whose transport speaks TLS with cfg; the
// engine client configures its dialling for the host.
func tlsClient(cfg *tls.Config) *http.Client {
	return &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}}
}
