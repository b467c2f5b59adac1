// Command pushpull runs a push/pull worker pipeline against
// a Redis-compatible server: a producer LPUSHes tasks (pipelined), N
// workers pull them with BLMPOP (blocking, up to a batch at a time),
// push their results to a sink list, and one sink collects them.
//
//	go run ./examples/pushpull -addr 127.0.0.1:6379 -workers 8 -tasks 100000
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"strconv"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:6379", "server address")
	workers := flag.Int("workers", 8, "number of workers")
	tasks := flag.Int("tasks", 100000, "number of tasks")
	flag.Parse()
	start := time.Now()
	got, err := run(*addr, *workers, *tasks)
	if err != nil {
		log.Fatal(err)
	}
	el := time.Since(start)
	fmt.Printf("%d tasks through %d workers in %v (%.0f tasks/s)\n", len(got), *workers, el, float64(len(got))/el.Seconds())
}

const batch = 256

// run pushes tasks 0..n-1, processes them with the workers and returns the
// results the sink collected (result "done:<i>" for task i).
func run(addr string, workers, n int) ([]string, error) {
	prefix := fmt.Sprintf("pushpull:%d:", time.Now().UnixNano())
	tasksKey, sinkKey := prefix+"tasks", prefix+"results"
	errc := make(chan error, workers+2)
	for w := 0; w < workers; w++ {
		go func() { errc <- worker(addr, tasksKey, sinkKey) }()
	}
	results := make(chan []string, 1)
	go func() {
		r, err := sink(addr, sinkKey, n)
		results <- r
		errc <- err
	}()
	go func() { errc <- produce(addr, tasksKey, n, workers) }()
	// produce, sink and the workers each report once.
	for i := 0; i < workers+2; i++ {
		if err := <-errc; err != nil {
			return nil, err
		}
	}
	return <-results, nil
}

// produce LPUSHes the tasks in pipelined batches, then one stop marker per worker.
func produce(addr, key string, n, workers int) error {
	c, err := dial(addr)
	if err != nil {
		return err
	}
	defer c.close()
	for i := 0; i < n; {
		args := []string{"LPUSH", key}
		for ; i < n && len(args) < batch+2; i++ {
			args = append(args, strconv.Itoa(i))
		}
		c.send(args...)
	}
	for w := 0; w < workers; w++ {
		c.send("LPUSH", key, "stop")
	}
	if err := c.flush(); err != nil {
		return err
	}
	for sent := (n+batch-1)/batch + workers; sent > 0; sent-- {
		if _, err := c.read(); err != nil {
			return err
		}
	}
	return nil
}

// worker pulls tasks until it sees a stop marker, pushing one result per task.
func worker(addr, tasksKey, sinkKey string) error {
	c, err := dial(addr)
	if err != nil {
		return err
	}
	defer c.close()
	for {
		// Redis's BLMPOP: pop up to a batch, blocking while the list is empty.
		r, err := c.do("BLMPOP", "0", "1", tasksKey, "RIGHT", "COUNT", strconv.Itoa(batch))
		if err != nil {
			return err
		}
		items, _ := r.([]any)
		if len(items) != 2 {
			return fmt.Errorf("worker: unexpected reply %v", r)
		}
		elems, _ := items[1].([]any)
		args := []string{"LPUSH", sinkKey}
		stops := 0
		for _, e := range elems {
			s, _ := e.(string)
			if s == "stop" {
				stops++
				continue
			}
			args = append(args, "done:"+s)
		}
		if stops > 0 {
			if len(args) > 2 {
				if _, err := c.do(args...); err != nil {
					return err
				}
			}
			// Hand the other workers the markers this batch took for them.
			for ; stops > 1; stops-- {
				if _, err := c.do("LPUSH", tasksKey, "stop"); err != nil {
					return err
				}
			}
			return nil
		}
		if len(args) > 2 {
			if _, err := c.do(args...); err != nil {
				return err
			}
		}
	}
}

// sink collects n results.
func sink(addr, key string, n int) ([]string, error) {
	c, err := dial(addr)
	if err != nil {
		return nil, err
	}
	defer c.close()
	out := make([]string, 0, n)
	for len(out) < n {
		r, err := c.do("BLMPOP", "10", "1", key, "RIGHT", "COUNT", "1000")
		if err != nil {
			return out, err
		}
		if r == nil {
			return out, fmt.Errorf("sink: timed out with %d of %d results", len(out), n)
		}
		items := r.([]any)
		for _, e := range items[1].([]any) {
			out = append(out, e.(string))
		}
	}
	return out, nil
}

// A minimal RESP2 client.

type conn struct {
	nc net.Conn
	r  *bufio.Reader
	w  *bufio.Writer
}

func dial(addr string) (*conn, error) {
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	return &conn{nc: nc, r: bufio.NewReaderSize(nc, 64<<10), w: bufio.NewWriterSize(nc, 64<<10)}, nil
}

func (c *conn) close() { c.nc.Close() }

func (c *conn) send(args ...string) {
	c.w.WriteString("*" + strconv.Itoa(len(args)) + "\r\n")
	for _, a := range args {
		c.w.WriteString("$" + strconv.Itoa(len(a)) + "\r\n" + a + "\r\n")
	}
}

func (c *conn) flush() error { return c.w.Flush() }

func (c *conn) do(args ...string) (any, error) {
	c.send(args...)
	if err := c.flush(); err != nil {
		return nil, err
	}
	return c.read()
}

func (c *conn) read() (any, error) {
	line, err := c.r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	if len(line) < 3 {
		return nil, errors.New("short reply")
	}
	body := line[1 : len(line)-2]
	switch line[0] {
	case '+':
		return body, nil
	case '-':
		return nil, errors.New(body)
	case ':':
		return strconv.ParseInt(body, 10, 64)
	case '$':
		n, _ := strconv.Atoi(body)
		if n < 0 {
			return nil, nil
		}
		buf := make([]byte, n+2)
		if _, err := ioReadFull(c.r, buf); err != nil {
			return nil, err
		}
		return string(buf[:n]), nil
	case '*':
		n, _ := strconv.Atoi(body)
		if n < 0 {
			return nil, nil
		}
		out := make([]any, n)
		for i := range out {
			if out[i], err = c.read(); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("bad reply %q", line)
}

func ioReadFull(r *bufio.Reader, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		k, err := r.Read(b[n:])
		n += k
		if err != nil {
			return n, err
		}
	}
	return n, nil
}
