package server

import "github.com/sluicedb/sluice/config"

// Config is the server's configuration; the directives, their parsing,
// the config file and CONFIG REWRITE are package config's.
type Config = config.Config

// NewConfig returns the default configuration.
func NewConfig() *Config { return config.New(aclCommands()) }

func init() { config.Version = SluiceVersion }
