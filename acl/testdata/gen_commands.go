//go:build ignore

// gen_commands writes redis-7.0-commands.txt from a running redis-server
// 7.0's COMMAND reply: one line per command and subcommand with its ACL
// categories and, for commands every user may run, no_auth.
//
//	go run gen_commands.go -addr 127.0.0.1:PORT > redis-7.0-commands.txt
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"sort"
	"strings"

	"github.com/redis/go-redis/v9"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:6379", "redis-server 7.0 to ask")
	flag.Parse()
	c := redis.NewClient(&redis.Options{Addr: *addr, Protocol: 2})
	reply, err := c.Do(context.Background(), "COMMAND").Slice()
	if err != nil {
		log.Fatal(err)
	}
	var lines []string
	var walk func(cmds []any)
	walk = func(cmds []any) {
		for _, x := range cmds {
			info := x.([]any)
			line := []string{info[0].(string)}
			for _, f := range info[2].([]any) {
				if f == "no_auth" {
					line = append(line, "no_auth")
				}
			}
			for _, cat := range info[6].([]any) {
				line = append(line, cat.(string))
			}
			lines = append(lines, strings.Join(line, " "))
			walk(info[9].([]any))
		}
	}
	walk(reply)
	sort.Strings(lines)
	fmt.Println("# COMMAND of redis-server 7.0.15: name [no_auth] categories (gen_commands.go)")
	for _, l := range lines {
		fmt.Println(l)
	}
}
