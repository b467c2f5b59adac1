package server

import (
	_ "embed"
	"encoding/json"
	"sync"
)

// commanddocs.json is generated from Redis 7.0.15's src/commands/*.json:
// for every command (subcommands as "parent|sub") the documentation COMMAND
// DOCS shows, and the flags, ACL categories, tips, legacy key range and key
// specifications COMMAND INFO shows, already in Redis's reply order. It is
// data describing Redis's public command interface (Redis 7.0 is
// BSD-3-Clause licensed, Copyright (c) Salvatore Sanfilippo and Redis Ltd.);
// no Redis code is used.
//
//go:embed commanddocs.json
var commandDocsJSON []byte

type docArg struct {
	Name            string   `json:"name"`
	Type            string   `json:"type"`
	KeySpecIndex    *int     `json:"key_spec_index"`
	Token           string   `json:"token"`
	Summary         string   `json:"summary"`
	Since           string   `json:"since"`
	DeprecatedSince string   `json:"deprecated_since"`
	Flags           []string `json:"flags"`
	Arguments       []docArg `json:"arguments"`
}

type docKeySpec struct {
	Notes string   `json:"notes"`
	Flags []string `json:"flags"`
	BS    struct {
		Type      string `json:"type"`
		Index     int    `json:"index"`
		Keyword   string `json:"keyword"`
		StartFrom int    `json:"startfrom"`
	} `json:"bs"`
	FK struct {
		Type string `json:"type"`
		A    int    `json:"a"` // lastkey | keynumidx
		B    int    `json:"b"` // keystep | firstkey
		C    int    `json:"c"` // limit   | keystep
	} `json:"fk"`
}

// cmdDoc is one command's Redis metadata.
type cmdDoc struct {
	Summary         string       `json:"summary"`
	Since           string       `json:"since"`
	Group           string       `json:"group"`
	Complexity      string       `json:"complexity"`
	DocFlags        []string     `json:"doc_flags"`
	DeprecatedSince string       `json:"deprecated_since"`
	ReplacedBy      string       `json:"replaced_by"`
	History         [][2]string  `json:"history"`
	Arguments       []docArg     `json:"arguments"`
	Tips            []string     `json:"tips"`
	KeySpecs        []docKeySpec `json:"key_specs"`
	Flags           []string     `json:"flags"`
	ACL             []string     `json:"acl"`
	Legacy          [3]int       `json:"legacy"`
}

var (
	docsOnce sync.Once
	docs     map[string]*cmdDoc
)

// redisDoc returns Redis's metadata for a command name ("parent|sub"), or
// nil for a command Redis 7.0 does not have.
func redisDoc(name string) *cmdDoc {
	docsOnce.Do(func() {
		docs = map[string]*cmdDoc{}
		if err := json.Unmarshal(commandDocsJSON, &docs); err != nil {
			panic("commanddocs.json: " + err.Error())
		}
	})
	return docs[name]
}

func (c *Client) replyDocArgs(args []docArg) {
	c.w.Array(len(args))
	for _, a := range args {
		n := 2
		if a.KeySpecIndex != nil {
			n++
		}
		for _, s := range []string{a.Token, a.Summary, a.Since, a.DeprecatedSince} {
			if s != "" {
				n++
			}
		}
		if len(a.Flags) > 0 {
			n++
		}
		if a.Type == "oneof" || a.Type == "block" {
			n++
		}
		c.w.Map(n)
		c.w.BulkString("name")
		c.w.BulkString(a.Name)
		c.w.BulkString("type")
		c.w.BulkString(a.Type)
		if a.KeySpecIndex != nil {
			c.w.BulkString("key_spec_index")
			c.w.Int(int64(*a.KeySpecIndex))
		}
		for _, kv := range [][2]string{{"token", a.Token}, {"summary", a.Summary}, {"since", a.Since}, {"deprecated_since", a.DeprecatedSince}} {
			if kv[1] != "" {
				c.w.BulkString(kv[0])
				c.w.BulkString(kv[1])
			}
		}
		if len(a.Flags) > 0 {
			c.w.BulkString("flags")
			c.w.Set(len(a.Flags))
			for _, f := range a.Flags {
				c.w.Simple(f)
			}
		}
		if a.Type == "oneof" || a.Type == "block" {
			c.w.BulkString("arguments")
			c.replyDocArgs(a.Arguments)
		}
	}
}
