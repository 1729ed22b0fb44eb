//go:build !go1.24

package main

import (
	"errors"
	"net/http"
)

// enableH2C refuses: before Go 1.24 the standard library has no HTTP/2 in clear text (golang.org/x/net's h2c would
// be a dependency this server does not take).
func enableH2C(server *http.Server) error {
	return errors.New("-h2c needs Go 1.24 or later to build go-nethttp: the standard library's unencrypted HTTP/2")
}
