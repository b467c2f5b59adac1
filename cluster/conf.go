package cluster

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// nodes.conf: the CLUSTER NODES lines of every node but those in
// handshake, then "vars currentEpoch N lastVoteEpoch M", written in place
// (one write, padded with newlines over a longer old file, then
// truncated) as Redis writes it, and locked with flock so two nodes never
// share one.

func (c *Cluster) lockConfig() error {
	f, err := os.OpenFile(c.configFile, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("Can't open %s in order to acquire a lock: %v", c.configFile, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return fmt.Errorf("Sorry, the cluster configuration file %s is already used by a different Redis Cluster node. Please make sure that different nodes use different cluster configuration files.", c.configFile)
		}
		return fmt.Errorf("Impossible to lock %s: %v", c.configFile, err)
	}
	c.lockFile = f
	return nil
}

func (c *Cluster) unlockConfig() {
	if c.lockFile != nil {
		syscall.Flock(int(c.lockFile.Fd()), syscall.LOCK_UN)
		c.lockFile.Close()
		c.lockFile = nil
	}
}

var errCorrupt = errors.New("Unrecoverable error: corrupted cluster config file.")

// loadConfig reads nodes.conf; false when there is none (or it is empty).
func (c *Cluster) loadConfig() (bool, error) {
	data, err := os.ReadFile(c.configFile)
	if err != nil {
		if os.IsNotExist(err) {
			return false, nil
		}
		return false, fmt.Errorf("Loading the cluster node config from %s: %v", c.configFile, err)
	}
	if len(data) == 0 {
		return false, nil
	}
	for _, line := range strings.Split(string(data), "\n") {
		if line == "" {
			continue
		}
		argv, ok := splitArgs(line)
		if !ok || len(argv) == 0 {
			return false, errCorrupt
		}
		if strings.EqualFold(argv[0], "vars") {
			if len(argv)%2 == 0 {
				return false, errCorrupt
			}
			for j := 1; j < len(argv); j += 2 {
				v, _ := strconv.ParseUint(argv[j+1], 10, 64)
				switch strings.ToLower(argv[j]) {
				case "currentepoch":
					c.currentEpoch = v
				case "lastvoteepoch":
					c.lastVoteEpoch = v
				default:
					c.log(LogWarning, "Skipping unknown cluster config variable '%s'", argv[j])
				}
			}
			continue
		}
		if len(argv) < 8 || !verifyName(argv[0]) {
			return false, errCorrupt
		}
		n := c.lookupNode(argv[0])
		if n == nil {
			n = newNode(argv[0], 0)
			c.addNode(n)
		}
		addr := argv[1]
		if i := strings.IndexByte(addr, ','); i >= 0 {
			n.hostname = addr[i+1:]
			addr = addr[:i]
		} else {
			n.hostname = ""
		}
		p := strings.LastIndexByte(addr, ':')
		if p < 0 {
			return false, errCorrupt
		}
		n.ip = addr[:p]
		port := addr[p+1:]
		bus := ""
		if i := strings.IndexByte(port, '@'); i >= 0 {
			port, bus = port[:i], port[i+1:]
		}
		n.port = atoi(port)
		if bus != "" {
			n.cport = atoi(bus)
		} else {
			n.cport = n.port + 10000
		}
		for _, f := range strings.Split(argv[2], ",") {
			switch strings.ToLower(f) {
			case "myself":
				if c.myself != nil {
					return false, errCorrupt
				}
				c.myself = n
				n.flags |= FlagMyself
			case "master":
				n.flags |= FlagMaster
			case "slave":
				n.flags |= FlagSlave
			case "fail?":
				n.flags |= FlagPFail
			case "fail":
				n.flags |= FlagFail
				n.failTime = mstime()
			case "handshake":
				n.flags |= FlagHandshake
			case "noaddr":
				n.flags |= FlagNoAddr
			case "nofailover":
				n.flags |= FlagNoFailover
			case "noflags":
			default:
				return false, errors.New("Unknown flag in redis cluster config file")
			}
		}
		if argv[3][0] != '-' {
			if !verifyName(argv[3]) {
				return false, errCorrupt
			}
			m := c.lookupNode(argv[3])
			if m == nil {
				m = newNode(argv[3], 0)
				c.addNode(m)
			}
			n.slaveOf = m
			m.addSlave(n)
		}
		if atoi(argv[4]) != 0 {
			n.pingSent = mstime()
		}
		if atoi(argv[5]) != 0 {
			n.pongReceived = mstime()
		}
		if n.isSlave() && n.slaveOf != nil {
			n.configEpoch = 0
		} else {
			n.configEpoch, _ = strconv.ParseUint(argv[6], 10, 64)
		}
		for _, a := range argv[8:] {
			if a[0] == '[' {
				i := strings.IndexByte(a, '-')
				if i < 0 || i+3 > len(a) {
					return false, errCorrupt
				}
				slot := atoi(a[1:i])
				dir := a[i+1]
				if slot < 0 || slot >= Slots {
					return false, errCorrupt
				}
				rest := a[i+3:]
				e := strings.IndexByte(rest, ']')
				if e < 0 || !verifyName(rest[:e]) {
					return false, errCorrupt
				}
				cn := c.lookupNode(rest[:e])
				if cn == nil {
					cn = newNode(rest[:e], 0)
					c.addNode(cn)
				}
				if dir == '>' {
					c.setMigrating(slot, cn)
				} else {
					c.setImporting(slot, cn)
				}
				continue
			}
			start, stop := 0, 0
			if i := strings.IndexByte(a, '-'); i >= 0 {
				start, stop = atoi(a[:i]), atoi(a[i+1:])
			} else {
				start = atoi(a)
				stop = start
			}
			if start < 0 || start >= Slots || stop < 0 || stop >= Slots {
				return false, errCorrupt
			}
			for s := start; s <= stop; s++ {
				c.addSlot(n, s)
			}
		}
	}
	if c.myself == nil {
		return false, errCorrupt
	}
	c.log(LogNotice, "Node configuration loaded, I'm %s", c.myself.name)
	if m := c.maxEpoch(); m > c.currentEpoch {
		c.currentEpoch = m
	}
	return true, nil
}

// atoi parses a leading decimal integer as C's atoi does (0 on garbage).
func atoi(s string) int {
	neg := false
	i := 0
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	if i < len(s) && (s[i] == '-' || s[i] == '+') {
		neg = s[i] == '-'
		i++
	}
	n := 0
	for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
		n = n*10 + int(s[i]-'0')
		if n > 1<<40 {
			break
		}
	}
	if neg {
		return -n
	}
	return n
}

// saveConfig writes nodes.conf in place.
func (c *Cluster) saveConfig(fsync bool) error {
	c.todo &^= todoSaveConfig
	content := c.nodesDescription(FlagHandshake, false)
	content += fmt.Sprintf("vars currentEpoch %d lastVoteEpoch %d\n", c.currentEpoch, c.lastVoteEpoch)
	f, err := os.OpenFile(c.configFile, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	buf := []byte(content)
	if st.Size() > int64(len(buf)) {
		pad := make([]byte, int(st.Size())-len(buf))
		for i := range pad {
			pad[i] = '\n'
		}
		buf = append(buf, pad...)
	}
	if _, err := f.WriteAt(buf, 0); err != nil {
		return err
	}
	if fsync {
		c.todo &^= todoFsyncConfig
		if err := f.Sync(); err != nil {
			return err
		}
	}
	if len(buf) != len(content) {
		f.Truncate(int64(len(content)))
	}
	return nil
}

func (c *Cluster) saveConfigOrDie(fsync bool) {
	if err := c.saveConfig(fsync); err != nil {
		c.host.Fatal("Fatal: can't update cluster config file.")
	}
}

// nodeDescription is one CLUSTER NODES line (without the newline).
func (c *Cluster) nodeDescription(n *Node, usePPort bool) string {
	var b strings.Builder
	port := n.port
	if usePPort && n.pport != 0 {
		port = n.pport
	}
	b.WriteString(n.name)
	b.WriteByte(' ')
	b.WriteString(n.ip)
	b.WriteByte(':')
	b.WriteString(strconv.Itoa(port))
	b.WriteByte('@')
	b.WriteString(strconv.Itoa(n.cport))
	if n.hostname != "" {
		b.WriteByte(',')
		b.WriteString(n.hostname)
	}
	b.WriteByte(' ')
	b.WriteString(flagsString(n.flags))
	b.WriteByte(' ')
	if n.slaveOf != nil {
		b.WriteString(n.slaveOf.name)
	} else {
		b.WriteByte('-')
	}
	epoch := n.configEpoch
	if n.isSlave() && n.slaveOf != nil {
		epoch = n.slaveOf.configEpoch
	}
	link := "disconnected"
	if n.link != nil || n.isMyself() {
		link = "connected"
	}
	fmt.Fprintf(&b, " %d %d %d %s", n.pingSent, n.pongReceived, epoch, link)
	if n.numSlots > 0 {
		start := -1
		for j := 0; j < Slots; j++ {
			bit := n.slots.Has(j)
			if bit && start == -1 {
				start = j
			}
			if start != -1 && (!bit || j == Slots-1) {
				end := j - 1
				if bit && j == Slots-1 {
					end = j
				}
				if start == end {
					fmt.Fprintf(&b, " %d", start)
				} else {
					fmt.Fprintf(&b, " %d-%d", start, end)
				}
				start = -1
			}
		}
	}
	if n.isMyself() {
		for j := 0; j < Slots; j++ {
			if m := c.migrating[j]; m != nil {
				fmt.Fprintf(&b, " [%d->-%s]", j, m.name)
			} else if i := c.importing[j]; i != nil {
				fmt.Fprintf(&b, " [%d-<-%s]", j, i.name)
			}
		}
	}
	return b.String()
}

// nodesDescription is clusterGenNodesDescription: every node not having
// a flag of filter, one line each.
func (c *Cluster) nodesDescription(filter int, usePPort bool) string {
	var b strings.Builder
	for _, n := range c.sortedNodes() {
		if n.flags&filter != 0 {
			continue
		}
		b.WriteString(c.nodeDescription(n, usePPort))
		b.WriteByte('\n')
	}
	return b.String()
}

// splitArgs splits a nodes.conf line as sdssplitargs does (nodes.conf
// lines hold no quotes; quoted strings are accepted anyway).
func splitArgs(line string) ([]string, bool) {
	var out []string
	i := 0
	for {
		for i < len(line) && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r' || line[i] == '\n') {
			i++
		}
		if i >= len(line) {
			return out, true
		}
		var cur strings.Builder
		if line[i] == '"' || line[i] == '\'' {
			q := line[i]
			i++
			for {
				if i >= len(line) {
					return nil, false
				}
				if line[i] == '\\' && q == '"' && i+1 < len(line) {
					cur.WriteByte(line[i+1])
					i += 2
					continue
				}
				if line[i] == q {
					i++
					break
				}
				cur.WriteByte(line[i])
				i++
			}
		} else {
			for i < len(line) && line[i] != ' ' && line[i] != '\t' && line[i] != '\r' && line[i] != '\n' {
				cur.WriteByte(line[i])
				i++
			}
		}
		out = append(out, cur.String())
	}
}
