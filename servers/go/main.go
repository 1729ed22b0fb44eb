// go-nethttp: benchlab's reference server on Go's standard library (net/http), serving the scenarios every
// built-in server serves, with the same bodies (benchlab/running/scenarios.py).
//
//	go-nethttp -addr 127.0.0.1:8080
//
// GOMAXPROCS is left to the runtime, which sets it from the CPUs the process may run on (its affinity mask, so
// the cores taskset or a container's cpuset gives it); GET /info says what it chose.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"runtime"
	"strconv"
	"time"
)

// hello is HELLO_BODY: 70 bytes.
const hello = "Hello from benchlab: one fixed body, served alike by all three servers"

// user is Responses.user() of the Spring servers, encoded on each request as Jackson does there.
type user struct {
	ID     int64  `json:"id"`
	UID    string `json:"uid"`
	Name   string `json:"name"`
	Age    int    `json:"age"`
	School string `json:"school"`
}

var theUser = user{ID: 1, UID: "5f2b6c1e-8d3a-4e7b-9c21-0a6d4f3b2e19", Name: "benchlab", Age: 20,
	School: "Spring Boot University"}

func helloHandler(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain;charset=UTF-8")
	io.WriteString(w, hello)
}

func jsonHandler(w http.ResponseWriter, r *http.Request) {
	body, err := json.Marshal(theUser) // Marshal, not an Encoder: an Encoder adds a newline Jackson does not
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(body)
}

// sleepHandler holds the request's goroutine for ms milliseconds (10 by default), as the servlet servers hold a
// thread; a goroutine is cheap, so it waits as WebFlux's timer does.
func sleepHandler(w http.ResponseWriter, r *http.Request) {
	ms := int64(10)
	if given := r.URL.Query().Get("ms"); given != "" {
		parsed, err := strconv.ParseInt(given, 10, 64)
		if err != nil || parsed < 0 {
			http.Error(w, "ms must be a whole number of milliseconds", http.StatusBadRequest)
			return
		}
		ms = parsed
	}
	time.Sleep(time.Duration(ms) * time.Millisecond)
	w.Header().Set("Content-Type", "text/plain;charset=UTF-8")
	fmt.Fprintf(w, "slept %d ms", ms)
}

func echoHandler(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST a body to echo", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Write(body)
}

func infoHandler(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"server": "go-nethttp", "server_version": runtime.Version(), "go_version": runtime.Version(),
		"gomaxprocs": runtime.GOMAXPROCS(0), "num_cpu": runtime.NumCPU(),
	})
}

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "the address to listen on, host:port")
	h2c := flag.Bool("h2c", false, "serve HTTP/2 in clear text with prior knowledge beside HTTP/1.1 (Go 1.24+)")
	cert := flag.String("cert", "", "serve TLS with this PEM certificate (HTTP/2 and HTTP/1.1 by ALPN)")
	key := flag.String("key", "", "the PEM key of -cert")
	flag.Parse()
	mux := http.NewServeMux()
	mux.HandleFunc("/hello", helloHandler)
	mux.HandleFunc("/json", jsonHandler)
	mux.HandleFunc("/sleep", sleepHandler)
	mux.HandleFunc("/echo", echoHandler)
	mux.HandleFunc("/info", infoHandler)
	server := &http.Server{Addr: *addr, Handler: mux}
	if *h2c {
		if err := enableH2C(server); err != nil {
			log.Fatal(err)
		}
	}
	log.Printf("go-nethttp %s listening on %s, GOMAXPROCS %d, h2c %v, TLS %v", runtime.Version(), *addr,
		runtime.GOMAXPROCS(0), *h2c, *cert != "")
	if *cert != "" {
		log.Fatal(server.ListenAndServeTLS(*cert, *key))
	}
	log.Fatal(server.ListenAndServe())
}
