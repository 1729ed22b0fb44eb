//go:build go1.24

package main

import "net/http"

// enableH2C lets the server take HTTP/2 in clear text with prior knowledge (the client's first bytes are HTTP/2's
// preface, no HTTP/1.1 upgrade) beside HTTP/1.1 on the same port: the standard library's own, since Go 1.24.
func enableH2C(server *http.Server) error {
	protocols := new(http.Protocols)
	protocols.SetHTTP1(true)
	protocols.SetUnencryptedHTTP2(true)
	server.Protocols = protocols
	return nil
}
