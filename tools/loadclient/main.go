// Command loadclient measures the daemon's API under concurrent load for
// tools/bench-recommend.sh: -c clients each send GET requests back to back (cycling
// through the -url list) for -d, then it prints requests per second and latency
// percentiles of the successful requests, and the count of failures (non-2xx/404 or
// transport errors).
//
//	loadclient -c 20 -d 10s -url 'http://127.0.0.1:8080/v1/recommend?model=llama-2-7b&task=qlora'
//
// A {n} in a URL is replaced by the request's sequence number (unique across clients),
// so every request can ask a different question and none is answered from a cache:
//
//	loadclient -c 20 -d 10s -url 'http://127.0.0.1:8080/v1/recommend?model=llama-2-7b&task=qlora&tokens=1{n}000'
package main

import (
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

type urls []string

func (u *urls) String() string     { return strings.Join(*u, " ") }
func (u *urls) Set(v string) error { *u = append(*u, v); return nil }

func main() {
	var list urls
	clients := flag.Int("c", 20, "concurrent clients")
	dur := flag.Duration("d", 10*time.Second, "how long to send")
	timeout := flag.Duration("timeout", 10*time.Second, "per-request timeout")
	flag.Var(&list, "url", "URL to request (repeat to cycle through several)")
	flag.Parse()
	if len(list) == 0 {
		fmt.Fprintln(os.Stderr, "loadclient: give at least one -url")
		os.Exit(2)
	}
	tr := &http.Transport{MaxIdleConnsPerHost: *clients}
	hc := &http.Client{Transport: tr, Timeout: *timeout}
	var mu sync.Mutex
	var lat []time.Duration
	failed := 0
	var seq atomic.Int64
	deadline := time.Now().Add(*dur)
	start := time.Now()
	var wg sync.WaitGroup
	for c := range *clients {
		wg.Go(func() {
			var mine []time.Duration
			bad := 0
			for i := c; time.Now().Before(deadline); i++ {
				t0 := time.Now()
				u := strings.ReplaceAll(list[i%len(list)], "{n}", strconv.FormatInt(seq.Add(1), 10))
				resp, err := hc.Get(u)
				if err == nil {
					_, err = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusNotFound {
						err = fmt.Errorf("status %d", resp.StatusCode)
					}
				}
				if err != nil {
					bad++
					continue
				}
				mine = append(mine, time.Since(t0))
			}
			mu.Lock()
			lat = append(lat, mine...)
			failed += bad
			mu.Unlock()
		})
	}
	wg.Wait()
	el := time.Since(start)
	slices.Sort(lat)
	pct := func(p float64) time.Duration {
		if len(lat) == 0 {
			return 0
		}
		return lat[min(len(lat)-1, int(p*float64(len(lat))))]
	}
	fmt.Printf("requests=%d failed=%d rps=%.1f p50_ms=%.1f p99_ms=%.1f max_ms=%.1f\n", len(lat), failed,
		float64(len(lat))/el.Seconds(), ms(pct(0.50)), ms(pct(0.99)), ms(pct(1)))
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
